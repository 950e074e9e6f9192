"""gitleaks' maintained rule set (vendored `gitleaks.toml`), applied one line at a time.

gitleaks writes its rules in Go's RE2 syntax (`(?i)` mid-pattern, `\\z`, `[[:alnum:]]`);
google-re2 runs them with the same semantics instead of a hand translation. A rule runs
only on a line holding one of its keywords (one combined keyword search per line, as
gitleaks' Aho-Corasick prefilter), and its finding is kept as gitleaks keeps it: the
secret group, the entropy floor, the global and the rule's allowlists and stopwords.
Lines, not whole files: every rule but the private-key block is single-line in practice,
so a keystroke rescans only the lines it changed (`cache.secrets.LineMemo`); blocks are
`cache.secrets.generic`'s job.
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any

import re2

RULES_FILE = "gitleaks.toml"
LEFT_OUT = frozenset({"pkcs12-file"})
"""A rule on file names only (the scan's secret names cover such files)."""


@dataclass(frozen=True, slots=True)
class Allowlist:
    """One of gitleaks' allowlists: a finding it matches is not a secret."""

    regexes: Any  # re2 pattern or None
    target: str  # "secret", "match" or "line"
    stopwords: tuple[bytes, ...]
    paths: Any
    all_of: bool  # condition = "AND"

    def allows(self, secret: bytes, match: bytes, line: bytes, path: bytes) -> bool:
        target = match if self.target == "match" else line if self.target == "line" else secret
        checks = []
        if self.paths is not None:
            checks.append(bool(path) and self.paths.search(path) is not None)
        if self.regexes is not None:
            checks.append(self.regexes.search(target) is not None)
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        if self.all_of:
            return bool(checks) and all(checks)
        regex_or_word = checks[1:] if self.paths is not None else checks
        return any(regex_or_word)


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    regex: Any
    keywords: tuple[bytes, ...]
    entropy: float
    secret_group: int
    path: Any
    allowlists: tuple[Allowlist, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret's characters in the line searched, and the rule that found it."""

    start: int
    end: int
    rule: str


class RuleSet:
    """The compiled rules, the keyword prefilter and the global allowlist."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.rules = tuple(
            _rule(raw) for raw in config["rules"] if raw["id"] not in LEFT_OUT and "regex" in raw
        )
        self.global_allowlist = _allowlist(config.get("allowlist", {}))
        by_keyword: dict[bytes, list[Rule]] = {}
        for rule in self.rules:
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, []).append(rule)
        self.by_keyword = by_keyword
        self.inside = {k: [j for j in by_keyword if j in k] for k in by_keyword}
        """Keyword -> the keywords within it: a search finds the longest one only."""
        self.keywords = list(by_keyword)
        self.keyword_set = re2.Set.SearchSet(re2.Options())
        """All keywords at once, telling which occur (a findall would build a match object
        for each of a file's thousands of hits)."""
        for keyword in self.keywords:
            self.keyword_set.Add(re2.escape(keyword))
        self.keyword_set.Compile()
        longest_first = sorted(by_keyword, key=len, reverse=True)
        self.keyword_search = re2.compile(b"|".join(re2.escape(k) for k in longest_first))

    def find_in_text(self, data: bytes, lowered: bytes, path: str = "") -> list[Finding]:
        """The secrets of a whole file's bytes (`lowered` is `data.lower()`), in byte
        offsets: as gitleaks scans a file, each rule one RE2 pass over it, and only the
        rules whose keywords the file holds."""
        rules: dict[str, Rule] = {}
        for index in self.keyword_set.Match(lowered) or ():  # one pass: which keywords occur
            rules.update((rule.id, rule) for rule in self.by_keyword[self.keywords[index]])
        if not rules:
            return []
        found: list[Finding] = []
        where = path.encode("utf-8", "surrogatepass")
        for rule in rules.values():
            if rule.path is not None and not (where and rule.path.search(where)):
                continue
            found.extend(self._findings(rule, data, where, whole=True))
        return found

    def find(self, line: str, path: str = "") -> list[Finding]:
        """The secrets gitleaks' rules find in `line` (no newline in it). The rules run on
        its UTF-8 bytes: google-re2 converts offsets of a str at every call, which costs
        more than the match."""
        data = line.encode("utf-8", "surrogatepass")
        lowered = data.lower()
        if self.keyword_search.search(lowered) is None:
            return []
        rules: dict[str, Rule] = {}
        for keyword in set(self.keyword_search.findall(lowered)):
            for inner in self.inside[keyword]:
                rules.update((rule.id, rule) for rule in self.by_keyword[inner])
        found: list[Finding] = []
        where = path.encode("utf-8", "surrogatepass")
        for rule in rules.values():
            if rule.path is not None and not (where and rule.path.search(where)):
                continue
            found.extend(self._findings(rule, data, where))
        if found and not line.isascii():  # byte offsets to str offsets
            found = [Finding(_chars(data, f.start), _chars(data, f.end), f.rule) for f in found]
        return found

    def _findings(self, rule: Rule, text: bytes, path: bytes, whole: bool = False) -> list[Finding]:
        found = []
        for match in rule.regex.finditer(text):
            start, end = _secret_span(rule, match)
            secret = text[start:end].strip(b"\n")
            if not secret:
                continue
            if rule.entropy and shannon_entropy(secret.decode("utf-8", "replace")) <= rule.entropy:
                continue
            line = text
            if whole:  # the line of the match, for allowlists that read it
                line_start = text.rfind(b"\n", 0, match.start()) + 1
                line_end = text.find(b"\n", match.start())
                line = text[line_start : len(text) if line_end < 0 else line_end]
            allowlists = (self.global_allowlist, *rule.allowlists)
            if any(
                a is not None and a.allows(secret, match.group(0), line, path) for a in allowlists
            ):
                continue
            found.append(Finding(start, end, rule.id))
        return found


def _chars(data: bytes, offset: int) -> int:
    return len(data[:offset].decode("utf-8", "surrogatepass"))


def _secret_span(rule: Rule, match: Any) -> tuple[int, int]:
    """gitleaks' secret: the `secretGroup`, else the first non-empty group, else all."""
    groups = match.groups()
    if rule.secret_group and rule.secret_group <= len(groups):
        return match.span(rule.secret_group)  # type: ignore[no-any-return]
    for number, group in enumerate(groups, start=1):
        if group:
            return match.span(number)  # type: ignore[no-any-return]
    return match.span()  # type: ignore[no-any-return]


def shannon_entropy(value: str) -> float:
    """Bits per character, as gitleaks counts them."""
    if not value:
        return 0.0
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


def _bytes_pattern(pattern: str) -> Any:
    return re2.compile(pattern.encode("utf-8"))


def _joined(patterns: list[str]) -> Any:
    return _bytes_pattern("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def _allowlist(raw: dict[str, Any]) -> Allowlist | None:
    if not raw:
        return None
    return Allowlist(
        regexes=_joined(raw.get("regexes", [])),
        target=raw.get("regexTarget", "secret"),
        stopwords=tuple(word.lower().encode("utf-8") for word in raw.get("stopwords", [])),
        paths=_joined(raw["paths"]) if "paths" in raw and raw.get("condition") == "AND" else None,
        all_of=raw.get("condition") == "AND",
    )


def _rule(raw: dict[str, Any]) -> Rule:
    lists = [_allowlist(a) for a in raw.get("allowlists", [])]
    return Rule(
        id=raw["id"],
        regex=_bytes_pattern(raw["regex"]),
        keywords=tuple(k.lower().encode("utf-8") for k in raw.get("keywords", [])),
        entropy=float(raw.get("entropy", 0.0)),
        secret_group=int(raw.get("secretGroup", 0)),
        path=_bytes_pattern(raw["path"]) if "path" in raw else None,
        allowlists=tuple(a for a in lists if a is not None),
    )


@functools.cache
def rule_set() -> RuleSet:
    """The vendored rules, compiled once per process (~0.1 s)."""
    data = resources.files("cache.secrets").joinpath(RULES_FILE).read_bytes()
    return RuleSet(tomllib.loads(data.decode("utf-8")))
