"""Finds the files of a workspace worth indexing, fast, and never the ones that must stay private.

The walk prunes whole directories (version control, dependencies, build output, virtual
environments, anything ignored) before descending, decides most files by name alone, and
reads at most the first 8 KiB of the rest. Secrets are skipped by name whatever any ignore
file says, so they never reach an index or a prompt.

Ignore rules come in three independent layers, each with gitignore syntax and each able to
skip a file on its own: git's (`.gitignore` at every level and `.git/info/exclude`),
`.headstartignore` (at every level), and the `exclude` setting (relative to the root). A
negation works within its layer only, so a `.gitignore` can never bring back a file that
`.headstartignore` or the settings exclude.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import translate
from pathlib import Path

import pathspec

from cache.languages import has_extension, language_for_name, language_from_shebang

log = logging.getLogger(__name__)

SKIPPED_DIR_NAMES: frozenset[str] = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
        ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache", "dist", "build", "target",
        ".idea", ".vscode", ".eggs", ".gradle", ".next", ".nuxt", ".svelte-kit",
        ".terraform", "bower_components",
    }
)  # fmt: skip
"""Directories that hold version control data, dependencies, caches or build output."""

SECRET_NAME_PATTERNS: tuple[str, ...] = (
    ".env", ".env.*", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "*.ppk", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "credentials*",
    ".git-credentials", "*secret*", ".netrc", ".npmrc", ".pypirc", ".pgpass", ".htpasswd",
    ".ssh", ".gnupg", ".aws",
)  # fmt: skip
"""Names (case-insensitive) of files and directories that may hold credentials."""

GENERATED_NAME_PATTERNS: tuple[str, ...] = (
    "*.min.js", "*.min.mjs", "*.min.css", "*.map", "*.lock", "package-lock.json",
    "npm-shrinkwrap.json", "pnpm-lock.yaml", "go.sum",
)  # fmt: skip
"""Names of generated files that are large and teach a model nothing."""

BINARY_PROBE_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary (as git decides)."""

IGNORE_FILE_MAX_BYTES = 1 << 20
"""Ignore files longer than this are read only this far."""

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the stat must not hang us
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_OPEN_FLAGS_NO_FOLLOW = _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0)


def _name_matcher(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(translate(pattern) for pattern in patterns), re.IGNORECASE)


_SECRET_NAME = _name_matcher(SECRET_NAME_PATTERNS)
_GENERATED_NAME = _name_matcher(GENERATED_NAME_PATTERNS)
_NAMED_GROUP = re.compile(r"\(\?P<[^>]*>")


class SkipReason(StrEnum):
    """Why a file or directory was left out, as counted in a `ScanReport`."""

    IGNORED = "ignored"
    """By .gitignore or .git/info/exclude."""
    HEADSTARTIGNORE = "headstartignore"
    EXCLUDED = "excluded"
    """By the `exclude` setting."""
    SECRET = "secret"
    GENERATED = "generated"
    TOO_LARGE = "too_large"
    BINARY = "binary"
    UNKNOWN_LANGUAGE = "unknown_language"
    SYMLINK = "symlink"
    """A link, and links are not followed (or it leads to a directory already walked)."""
    OUTSIDE_ROOT = "outside_root"
    NOT_REGULAR = "not_regular"
    """A FIFO, socket or device."""
    UNREADABLE = "unreadable"
    """Permission denied, vanished mid-scan, or another OS error."""
    BAD_NAME = "bad_name"
    """Not valid UTF-8, so it could not be shown in an editor or a prompt."""
    SKIPPED_DIR = "skipped_dir"
    """One of SKIPPED_DIR_NAMES."""
    VIRTUALENV = "virtualenv"
    """A directory holding a pyvenv.cfg."""


@dataclass(frozen=True)
class ScanSettings:
    max_file_bytes: int = 1_000_000
    exclude: tuple[str, ...] = ()
    """Extra patterns in gitignore syntax, relative to each root."""
    follow_symlinks: bool = False
    """Follow links to files and directories, but only to targets inside the root."""


@dataclass(frozen=True)
class ScannedFile:
    """A file worth indexing, with what the scan learned about it without reading it."""

    root: Path
    path: str
    """Relative to `root`, with forward slashes (as `FileRecord.path`)."""
    abs_path: Path
    size: int
    mtime_ns: int
    language: str | None


@dataclass
class ScanReport:
    """What a scan found and what it left out, for the log line after indexing."""

    files: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    """Files left out, by `SkipReason`."""
    skipped_dirs: dict[str, int] = field(default_factory=dict)
    """Directories left out whole (their files are not counted), by `SkipReason`."""

    def skip_file(self, reason: SkipReason) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def skip_dir(self, reason: SkipReason) -> None:
        self.skipped_dirs[reason] = self.skipped_dirs.get(reason, 0) + 1

    def summary(self) -> str:
        """ "1234 files; skipped 56 files (40 unknown_language, ...) and 7 directories (...)"."""

        def counts(by_reason: dict[str, int]) -> str:
            ranked = sorted(by_reason.items(), key=lambda item: (-item[1], item[0]))
            return ", ".join(f"{count} {reason}" for reason, count in ranked)

        text = f"{self.files} files"
        if self.skipped:
            text += f"; skipped {sum(self.skipped.values())} files ({counts(self.skipped)})"
        if self.skipped_dirs:
            dirs = sum(self.skipped_dirs.values())
            text += f"; skipped {dirs} directories ({counts(self.skipped_dirs)})"
        return text


@dataclass(frozen=True, slots=True)
class _IgnoreRules:
    """The rules of one ignore file (or setting), for the paths under `base`."""

    base: str
    """"" for the root, else the directory's relative path with a trailing slash."""
    spec: pathspec.GitIgnoreSpec
    any_rule: re.Pattern[str] | None
    """All rules in one regex: most paths match none, and this says so in one call."""

    @classmethod
    def parse(cls, base: str, lines: Iterable[str]) -> _IgnoreRules | None:
        spec = pathspec.GitIgnoreSpec.from_lines(_valid_patterns(lines))
        regexes = [
            str(p.regex.pattern)
            for p in spec.patterns
            if p.include is not None and p.regex is not None
        ]
        if not regexes:
            return None
        try:
            any_rule: re.Pattern[str] | None = re.compile(
                "|".join(f"(?:{_NAMED_GROUP.sub('(?:', regex)})" for regex in regexes)
            )
        except re.error:
            any_rule = None
        return cls(base, spec, any_rule)

    def verdict(self, path: str) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no rule speaks of it."""
        relative = path[len(self.base) :]
        if self.any_rule is not None and self.any_rule.match(relative) is None:
            return None
        return self.spec.check_file(relative).include


_Layer = tuple[_IgnoreRules, ...]


def _is_ignored(layer: _Layer, path: str) -> bool:
    """Whether the deepest ignore file with a rule for `path` ignores it (git's precedence)."""
    for rules in reversed(layer):
        verdict = rules.verdict(path)
        if verdict is not None:
            return verdict
    return False


def _valid_patterns(lines: Iterable[str]) -> list[str]:
    """The lines pathspec accepts; git ignores a malformed pattern too (e.g. a lone "/")."""
    valid = []
    for line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except ValueError:
            log.debug("ignoring a malformed ignore pattern %r", line)
            continue
        valid.append(line)
    return valid


def _read_rules(file: str, base: str) -> _IgnoreRules | None:
    try:
        with open(file, "rb") as handle:
            data = handle.read(IGNORE_FILE_MAX_BYTES)
    except OSError as error:
        log.debug("Cannot read ignore file %s: %s", file, error)
        return None
    return _IgnoreRules.parse(base, data.decode("utf-8", "replace").splitlines())


def _git_info_exclude(git_dir: os.DirEntry[str], base: str) -> _Layer:
    """The repository's own exclude file: below every .gitignore in precedence."""
    try:
        if not git_dir.is_dir(follow_symlinks=False):
            return ()  # a worktree's or submodule's ".git" file points elsewhere
    except OSError:
        return ()
    rules = _read_rules(os.path.join(git_dir.path, "info", "exclude"), base)
    return (rules,) if rules is not None else ()


def _valid_name(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_probe(path: str, follow_symlinks: bool) -> bytes:
    flags = _OPEN_FLAGS if follow_symlinks else _OPEN_FLAGS_NO_FOLLOW
    descriptor = os.open(path, flags)
    try:
        return os.read(descriptor, BINARY_PROBE_BYTES)
    finally:
        os.close(descriptor)


def _inside(real_path: str, real_root: str) -> bool:
    return real_path == real_root or real_path.startswith(real_root.rstrip(os.sep) + os.sep)


@dataclass(slots=True)
class _Directory:
    """A directory waiting to be listed, with the ignore rules that apply inside it."""

    path: str
    as_path: Path
    prefix: str
    """Its relative path with a trailing slash ("" for the root)."""
    git: _Layer
    headstart: _Layer


def scan(
    root: Path,
    settings: ScanSettings = ScanSettings(),
    report: ScanReport | None = None,
    *,
    other_roots: Collection[Path] = (),
) -> Iterator[ScannedFile]:
    """The files under `root` worth indexing, depth first in name order.

    `report`, when given, is filled in as the walk goes. Directories in `other_roots` (the
    other workspace folders) are left to their own scan. Never raises for unreadable or
    vanishing files and directories: they are counted and logged at debug level.
    """
    report = report if report is not None else ScanReport()
    root_path = os.path.abspath(root)
    root_result = Path(root_path)
    try:
        real_root = os.path.realpath(root_path)
        root_stat = os.stat(root_path)
    except OSError as error:
        log.warning("Cannot scan workspace folder %s: %s", root_path, error)
        report.skip_dir(SkipReason.UNREADABLE)
        return
    if not stat.S_ISDIR(root_stat.st_mode):
        log.warning("Cannot scan workspace folder %s: not a directory", root_path)
        report.skip_dir(SkipReason.UNREADABLE)
        return

    follow = settings.follow_symlinks
    max_bytes = settings.max_file_bytes
    skip_file = report.skip_file
    skip_dir = report.skip_dir
    nested_roots = {os.path.abspath(other) for other in other_roots} - {root_path}
    excluded = _IgnoreRules.parse("", settings.exclude)
    visited_dirs = {(root_stat.st_dev, root_stat.st_ino)}

    pending = [_Directory(root_path, root_result, "", (), ())]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory.path) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            log.debug("Cannot list %s: %s", directory.path, error)
            skip_dir(SkipReason.UNREADABLE)
            continue

        git, headstart, prefix = directory.git, directory.headstart, directory.prefix
        by_name = {entry.name: entry for entry in entries}
        if prefix and "pyvenv.cfg" in by_name:
            skip_dir(SkipReason.VIRTUALENV)
            continue
        if ".git" in by_name:  # a repository's root: its own rules, not its parent's
            git = _git_info_exclude(by_name[".git"], prefix)
        for ignore_file, layer_name in ((".gitignore", "git"), (".headstartignore", "hs")):
            if ignore_file in by_name:
                rules = _read_rules(by_name[ignore_file].path, prefix)
                if rules is not None and layer_name == "git":
                    git = (*git, rules)
                elif rules is not None:
                    headstart = (*headstart, rules)

        subdirectories: list[_Directory] = []
        for entry in entries:
            name = entry.name
            try:
                if not _valid_name(name):
                    skip_file(SkipReason.BAD_NAME)
                    continue
                is_link = entry.is_symlink()
                if is_link:
                    if not follow:
                        skip_file(SkipReason.SYMLINK)
                        continue
                    if not _inside(os.path.realpath(entry.path), real_root):
                        skip_file(SkipReason.OUTSIDE_ROOT)
                        continue
                is_dir = entry.is_dir(follow_symlinks=follow)
                path = prefix + name

                if is_dir:
                    if name in SKIPPED_DIR_NAMES:
                        skip_dir(SkipReason.SKIPPED_DIR)
                    elif _SECRET_NAME.match(name):
                        skip_dir(SkipReason.SECRET)
                    elif entry.path in nested_roots:
                        pass
                    elif _is_ignored(git, path + "/"):
                        skip_dir(SkipReason.IGNORED)
                    elif _is_ignored(headstart, path + "/"):
                        skip_dir(SkipReason.HEADSTARTIGNORE)
                    elif excluded is not None and excluded.verdict(path + "/"):
                        skip_dir(SkipReason.EXCLUDED)
                    else:
                        if follow:
                            found = entry.stat()
                            identity = (found.st_dev, found.st_ino)
                            if identity in visited_dirs:
                                skip_dir(SkipReason.SYMLINK)
                                continue
                            visited_dirs.add(identity)
                        subdirectories.append(
                            _Directory(
                                entry.path, directory.as_path / name, path + "/", git, headstart
                            )
                        )
                    continue

                if _SECRET_NAME.match(name):
                    skip_file(SkipReason.SECRET)
                    continue
                if _GENERATED_NAME.match(name):
                    skip_file(SkipReason.GENERATED)
                    continue
                language = language_for_name(name)
                if language is None and has_extension(name):
                    skip_file(SkipReason.UNKNOWN_LANGUAGE)
                    continue
                if _is_ignored(git, path):
                    skip_file(SkipReason.IGNORED)
                    continue
                if _is_ignored(headstart, path):
                    skip_file(SkipReason.HEADSTARTIGNORE)
                    continue
                if excluded is not None and excluded.verdict(path):
                    skip_file(SkipReason.EXCLUDED)
                    continue

                found = entry.stat(follow_symlinks=follow)
                if not stat.S_ISREG(found.st_mode):
                    skip_file(SkipReason.NOT_REGULAR)
                    continue
                if found.st_size > max_bytes:
                    skip_file(SkipReason.TOO_LARGE)
                    continue
                if found.st_size:
                    probe = _read_probe(entry.path, follow)
                    if b"\0" in probe:
                        skip_file(SkipReason.BINARY)
                        continue
                    if language is None:
                        language = language_from_shebang(probe.split(b"\n", 1)[0])
                if language is None:
                    skip_file(SkipReason.UNKNOWN_LANGUAGE)
                    continue
            except OSError as error:
                log.debug("Skipping %s: %s", entry.path, error)
                skip_file(SkipReason.UNREADABLE)
                continue

            report.files += 1
            yield ScannedFile(
                root=root_result,
                path=path,
                abs_path=directory.as_path / name,
                size=found.st_size,
                mtime_ns=found.st_mtime_ns,
                language=language,
            )
        pending.extend(reversed(subdirectories))


def scan_roots(
    roots: Iterable[Path],
    settings: ScanSettings = ScanSettings(),
    report: ScanReport | None = None,
) -> Iterator[ScannedFile]:
    """The files of every workspace folder; a folder nested in another is scanned once, as
    its own root (its files get paths relative to it)."""
    unique = list(dict.fromkeys(Path(os.path.abspath(root)) for root in roots))
    for root in unique:
        yield from scan(root, settings, report, other_roots=unique)
