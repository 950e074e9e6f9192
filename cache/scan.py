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
from collections.abc import Callable, Collection, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import translate
from functools import lru_cache, partial
from operator import attrgetter
from pathlib import Path
from typing import Final, NamedTuple, Protocol

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
_SECRET_OR_GENERATED = _name_matcher(SECRET_NAME_PATTERNS + GENERATED_NAME_PATTERNS)
"""Most names are neither: one match says so for both."""


def is_secret_name(name: str) -> bool:
    """Whether a file or directory of this name may hold credentials (SECRET_NAME_PATTERNS)."""
    return _SECRET_NAME.match(name) is not None


_NAMED_GROUP = re.compile(r"\(\?P<[^>]*>")
_NAME = attrgetter("name")


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


class ScannedFile(NamedTuple):
    """A file worth indexing, with what the scan learned about it without reading it.
    (A named tuple: a scan makes one per file, three times faster than a dataclass.)"""

    root: Path
    path: str
    """Relative to `root`, with forward slashes (as `FileRecord.path`)."""
    size: int
    mtime_ns: int
    language: str | None

    @property
    def abs_path(self) -> Path:
        """Made on demand: building 27k Path objects was a third of a warm start's scan."""
        return self.root / self.path


class KnownFile(Protocol):
    """What a scan may know of a file from an earlier one (a `FileRecord` does)."""

    @property
    def size(self) -> int: ...

    @property
    def mtime_ns(self) -> int: ...

    @property
    def language(self) -> str | None: ...


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
        lines = list(lines)
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(lines)
        except ValueError:  # compile the lines one by one only to find the malformed ones
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


def _git_info_exclude(
    git_dir: str, base: str, read_rules: Callable[[str, str], _IgnoreRules | None]
) -> _Layer:
    """The repository's own exclude file: below every .gitignore in precedence."""
    try:
        if not stat.S_ISDIR(os.lstat(git_dir).st_mode):
            return ()  # a worktree's or submodule's ".git" file points elsewhere
    except OSError:
        return ()
    rules = read_rules(os.path.join(git_dir, "info", "exclude"), base)
    return (rules,) if rules is not None else ()


def _enter(
    directory: str,
    prefix: str,
    git: _Layer,
    headstart: _Layer,
    names: Container[str],
    read_rules: Callable[[str, str], _IgnoreRules | None] = _read_rules,
) -> tuple[_Layer, _Layer] | None:
    """The ignore layers inside a directory, given the names it holds (a listing, or the
    few names asked for), or None for a virtual environment (below the root), whose files
    are never indexed."""
    if prefix and "pyvenv.cfg" in names:
        return None
    if ".git" in names:  # a repository's root: its own rules, not its parent's
        git = _git_info_exclude(os.path.join(directory, ".git"), prefix, read_rules)
    if ".gitignore" in names:
        rules = read_rules(os.path.join(directory, ".gitignore"), prefix)
        if rules is not None:
            git = (*git, rules)
    if ".headstartignore" in names:
        rules = read_rules(os.path.join(directory, ".headstartignore"), prefix)
        if rules is not None:
            headstart = (*headstart, rules)
    return git, headstart


def _directory_skip(
    name: str, path: str, git: _Layer, headstart: _Layer, excluded: _IgnoreRules | None
) -> SkipReason | None:
    """Why a directory (`path` relative to the root) is left out by its name or the ignore
    rules, or None."""
    if name in SKIPPED_DIR_NAMES:
        return SkipReason.SKIPPED_DIR
    if _SECRET_NAME.match(name):
        return SkipReason.SECRET
    if _is_ignored(git, path + "/"):
        return SkipReason.IGNORED
    if _is_ignored(headstart, path + "/"):
        return SkipReason.HEADSTARTIGNORE
    if excluded is not None and excluded.verdict(path + "/"):
        return SkipReason.EXCLUDED
    return None


def _name_skip(
    name: str, path: str, git: _Layer, headstart: _Layer, excluded: _IgnoreRules | None
) -> tuple[SkipReason | None, str | None]:
    """Why a file is left out by its name or the ignore rules (or None), and the language
    its name tells (None: maybe a shebang says)."""
    if _SECRET_OR_GENERATED.match(name):
        if _SECRET_NAME.match(name):
            return SkipReason.SECRET, None
        return SkipReason.GENERATED, None
    language = language_for_name(name)
    if language is None and has_extension(name):
        return SkipReason.UNKNOWN_LANGUAGE, None
    if _is_ignored(git, path):
        return SkipReason.IGNORED, None
    if _is_ignored(headstart, path):
        return SkipReason.HEADSTARTIGNORE, None
    if excluded is not None and excluded.verdict(path):
        return SkipReason.EXCLUDED, None
    return None, language


def _contents_skip(
    size: int, probe: Callable[[], bytes], language: str | None, max_bytes: int
) -> tuple[SkipReason | None, str | None]:
    """Why a file is left out by its size or first bytes (`probe` reads them), or None,
    and its language (a shebang's when the name told none)."""
    if size > max_bytes:
        return SkipReason.TOO_LARGE, None
    if size:
        head = probe()
        if b"\0" in head:
            return SkipReason.BINARY, None
        if language is None:
            language = language_from_shebang(head.split(b"\n", 1)[0])
    if language is None:
        return SkipReason.UNKNOWN_LANGUAGE, None
    return None, language


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
    known: Mapping[str, KnownFile] | None = None,
    ordered: bool = True,
) -> Iterator[ScannedFile]:
    """The files under `root` worth indexing, depth first in name order (or in the order
    the file system lists them, a little faster, when not `ordered`).

    `report`, when given, is filled in as the walk goes. Directories in `other_roots` (the
    other workspace folders) are left to their own scan. A file in `known` (by relative
    path) with the same size and mtime is not read again: it keeps its known language, so
    a warm start only lists directories and stats files. Never raises for unreadable or
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

    pending = [_Directory(root_path, "", (), ())]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory.path) as listing:
                entries = sorted(listing, key=_NAME) if ordered else list(listing)
        except OSError as error:
            log.debug("Cannot list %s: %s", directory.path, error)
            skip_dir(SkipReason.UNREADABLE)
            continue

        prefix = directory.prefix
        by_name = {entry.name: entry for entry in entries}
        layers = _enter(directory.path, prefix, directory.git, directory.headstart, by_name)
        if layers is None:
            skip_dir(SkipReason.VIRTUALENV)
            continue
        git, headstart = layers

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
                    if entry.path in nested_roots:
                        continue
                    reason = _directory_skip(name, path, git, headstart, excluded)
                    if reason is not None:
                        skip_dir(reason)
                        continue
                    if follow:
                        found = entry.stat()
                        identity = (found.st_dev, found.st_ino)
                        if identity in visited_dirs:
                            skip_dir(SkipReason.SYMLINK)
                            continue
                        visited_dirs.add(identity)
                    subdirectories.append(_Directory(entry.path, path + "/", git, headstart))
                    continue

                reason, language = _name_skip(name, path, git, headstart, excluded)
                if reason is not None:
                    skip_file(reason)
                    continue
                found = entry.stat(follow_symlinks=follow)
                if not stat.S_ISREG(found.st_mode):
                    skip_file(SkipReason.NOT_REGULAR)
                    continue
                before = known.get(path) if known is not None else None
                if (
                    before is not None
                    and before.size == found.st_size
                    and before.mtime_ns == found.st_mtime_ns
                    and before.language is not None
                    and (language is None or language == before.language)
                ):
                    language = before.language  # unchanged since it was probed: no read
                else:
                    reason, language = _contents_skip(
                        found.st_size,
                        partial(_read_probe, entry.path, follow),
                        language,
                        max_bytes,
                    )
                    if reason is not None:
                        skip_file(reason)
                        continue
            except OSError as error:
                log.debug("Skipping %s: %s", entry.path, error)
                skip_file(SkipReason.UNREADABLE)
                continue

            report.files += 1
            yield ScannedFile(root_result, path, found.st_size, found.st_mtime_ns, language)
        pending.extend(reversed(subdirectories))


_SPECIAL_NAMES: Final = (".git", ".gitignore", ".headstartignore", "pyvenv.cfg")
"""The names in a directory that change what is indexed below it."""


def check_file(
    root: Path,
    path: str,
    settings: ScanSettings = ScanSettings(),
    data: bytes | None = None,
) -> ScannedFile | SkipReason:
    """What `scan(root, settings)` would make of the file at `path` (relative to `root`,
    forward slashes): its `ScannedFile`, or why it is left out. The same rules, for one
    file, without listing a directory: every ancestor's ignore files, names, links and
    virtual environments, then the file's name, size and first bytes.

    `data` is an editor's unsaved buffer: the size and binary rules then apply to it, and
    the file may be missing on disk (size and mtime are the buffer's length and the disk
    file's mtime, or 0). Never raises.
    """
    root_path = os.path.abspath(root)
    parts = path.split("/")
    if not path or "\0" in path or "\\" in path or any(p in ("", ".", "..") for p in parts):
        return SkipReason.OUTSIDE_ROOT
    if not all(_valid_name(part) for part in parts):
        return SkipReason.BAD_NAME
    follow = settings.follow_symlinks
    excluded = _IgnoreRules.parse("", settings.exclude)
    git: _Layer = ()
    headstart: _Layer = ()
    directory, prefix = root_path, ""
    try:
        real_root = os.path.realpath(root_path)
        for depth, name in enumerate(parts):
            names = {n for n in _SPECIAL_NAMES if os.path.lexists(os.path.join(directory, n))}
            layers = _enter(directory, prefix, git, headstart, names, _read_rules_cached)
            if layers is None:
                return SkipReason.VIRTUALENV
            git, headstart = layers
            current = os.path.join(directory, name)
            relative = prefix + name
            is_last = depth == len(parts) - 1
            if not is_last:
                reason = _link_skip(current, follow, real_root) or _directory_skip(
                    name, relative, git, headstart, excluded
                )
                if reason is not None:
                    return reason
                directory, prefix = current, relative + "/"
        reason, language = _name_skip(parts[-1], path, git, headstart, excluded)
        if reason is not None:
            return reason
        return _check_contents(Path(root_path), path, current, settings, language, data, real_root)
    except OSError as error:
        log.debug("Cannot check %s: %s", path, error)
        return SkipReason.UNREADABLE


def _check_contents(
    root: Path,
    path: str,
    absolute: str,
    settings: ScanSettings,
    language: str | None,
    data: bytes | None,
    real_root: str,
) -> ScannedFile | SkipReason:
    """The size, type and first-bytes rules of `check_file`, on the disk file or `data`."""
    try:
        reason = _link_skip(absolute, settings.follow_symlinks, real_root)
        if reason is not None:
            return reason
        found: os.stat_result | None = os.stat(absolute)
    except FileNotFoundError:
        if data is None:
            return SkipReason.UNREADABLE
        found = None
    if found is not None and not stat.S_ISREG(found.st_mode):
        return SkipReason.NOT_REGULAR
    mtime_ns = found.st_mtime_ns if found is not None else 0
    if data is not None:
        size = len(data)
        reason, language = _contents_skip(
            size, lambda: data[:BINARY_PROBE_BYTES], language, settings.max_file_bytes
        )
    else:
        assert found is not None
        size = found.st_size
        reason, language = _contents_skip(
            size,
            partial(_read_probe, absolute, settings.follow_symlinks),
            language,
            settings.max_file_bytes,
        )
    if reason is not None:
        return reason
    return ScannedFile(root, path, size, mtime_ns, language)


def _link_skip(path: str, follow: bool, real_root: str) -> SkipReason | None:
    """SYMLINK for a link when links are not followed, OUTSIDE_ROOT for one leading out."""
    if not os.path.islink(path):
        return None
    if not follow:
        return SkipReason.SYMLINK
    if not _inside(os.path.realpath(path), real_root):
        return SkipReason.OUTSIDE_ROOT
    return None


def _read_rules_cached(file: str, base: str) -> _IgnoreRules | None:
    """`_read_rules`, parsed again only when the file changes: checking one file at a time
    must not re-parse every ancestor's .gitignore each time."""
    try:
        info = os.stat(file)
    except OSError:
        return None
    return _parsed_rules(file, base, info.st_mtime_ns, info.st_size, info.st_ino)


@lru_cache(maxsize=256)
def _parsed_rules(
    file: str, base: str, mtime_ns: int, size: int, inode: int
) -> _IgnoreRules | None:
    return _read_rules(file, base)


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
