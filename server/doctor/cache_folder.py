"""The doctor's look at the project cache folder: where it is and why, whether the server
can write there, how big it is, and which store schemas it holds."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections import Counter
from pathlib import Path

from cache.store import SCHEMA_VERSION
from cache.user_dirs import headstart_cache_dir, legacy_cache_folders, project_cache_root
from server.config import Settings
from server.doctor.report import Check

STORE_NAME = re.compile(r"[0-9a-f]{16}-v(\d+)")
"""A project store's folder: xxh3 of the project root, then the schema (cache/store.py)."""


def cache_checks(settings: Settings) -> list[Check]:
    root, why = _cache_root(settings)
    projects = root / "projects"
    try:
        projects.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=projects, prefix=".doctor-"):
            pass
    except OSError as exc:
        return [
            Check(
                "cache",
                "FAIL",
                f"{root} ({why}) cannot be written: {exc.strerror or exc}",
                fix="make that folder yours and writable, or set cacheDir (HEADSTART_CACHE_DIR) "
                "to a folder you can write; without it every start indexes the project anew",
            )
        ]
    checks = [_contents(root, why, projects)]
    if stat.S_IMODE(projects.stat().st_mode) & 0o077:
        checks.append(
            Check(
                "cache",
                "WARN",
                f"{projects} can be read by other users (it holds your code's outlines)",
                fix=f"chmod 700 {projects}",
            )
        )
    checks.extend(_leftovers())
    return checks


def _cache_root(settings: Settings) -> tuple[Path, str]:
    if settings.cache_dir:
        named = "HEADSTART_CACHE_DIR" if os.environ.get("HEADSTART_CACHE_DIR") else "cacheDir"
        return Path(settings.cache_dir).expanduser(), named
    return project_cache_root(), "this platform's cache folder"


def _contents(root: Path, why: str, projects: Path) -> Check:
    schemas: Counter[int] = Counter()
    size = 0
    for entry in projects.iterdir():
        found = STORE_NAME.fullmatch(entry.name)
        if found and entry.is_dir():
            schemas[int(found.group(1))] += 1
            size += _size(entry)
    current = schemas.pop(SCHEMA_VERSION, 0)
    summary = (
        f"{root} ({why}): writable, {current} project store(s) of schema v{SCHEMA_VERSION}; "
        f"{size / 1e6:.1f} MB in all"
    )
    details: tuple[str, ...] = ()
    if schemas:
        older = ", ".join(f"v{version}: {n}" for version, n in sorted(schemas.items()))
        details = (f"stores of other schemas ({older}) are removed when their project next opens",)
    return Check("cache", "OK", summary, details=details)


def _size(folder: Path) -> int:
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except OSError:
                continue
    return total


def _leftovers() -> list[Check]:
    """A cache folder of an older Headstart that could not be moved to the new place."""
    current = headstart_cache_dir()
    return [
        Check(
            "cache",
            "WARN",
            f"an older Headstart's cache folder is left at {old}; this one uses {current}",
            fix=f"delete {old} (or move what you want to keep into {current})",
        )
        for old in legacy_cache_folders()
        if old.is_dir() and old.resolve() != current.resolve()
    ]
