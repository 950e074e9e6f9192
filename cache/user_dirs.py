"""Where Headstart keeps what it writes for the user: one rule for every part of it.

The project stores (`projects/` under the cache root), the local backend's state, logs,
vLLM's CPU build and its model folders all live in one folder, chosen by the platform's
convention through platformdirs: `$XDG_CACHE_HOME/headstart` or `~/.cache/headstart` on
Linux, `~/Library/Caches/headstart` on macOS, `%LOCALAPPDATA%\\headstart\\Cache` on Windows.
`HEADSTART_CACHE_DIR` moves the project stores and `HEADSTART_HOME` the backend's files.

Headstart used to put that folder at `${XDG_CACHE_HOME:-~/.cache}/headstart` on every
platform; where that is not the convention, the old folder is moved to the new place once,
with a log line.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from platformdirs import PlatformDirs
from platformdirs.api import PlatformDirsABC

log = logging.getLogger(__name__)

APP = "headstart"


def cache_folder(
    dirs: PlatformDirsABC | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """Headstart's cache folder by `dirs`' convention (this platform's by default), with
    the folder an older Headstart used moved there first if there is one to move."""
    dirs = PlatformDirs(APP, appauthor=False) if dirs is None else dirs
    environ = os.environ if environ is None else environ
    folder = Path(dirs.user_cache_dir)
    if not folder.is_absolute():  # a relative XDG_CACHE_HOME, which the XDG spec says to ignore
        folder = Path.home() / ".cache" / APP
    for old in legacy_cache_folders(environ):
        move_old_cache(old, folder)
    return folder


def legacy_cache_folders(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where Headstart kept its cache before it followed the platform's convention."""
    environ = os.environ if environ is None else environ
    xdg = environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return [base / APP]


def move_old_cache(old: Path, new: Path) -> bool:
    """Move the folder `old` to `new` unless they are one, `old` is gone or `new` exists
    already; True when this call moved it. A rename, so two processes racing to move it
    cannot both do it; across file systems it is left where it is, with a warning (copying
    a 3 GB vLLM environment is not something to do while an editor starts)."""
    try:
        if not old.is_dir() or new.exists() or old.resolve() == new.resolve():
            return False
        new.parent.mkdir(parents=True, exist_ok=True)
        os.rename(old, new)
    except FileNotFoundError:  # another process moved it first
        return False
    except OSError as exc:
        log.warning(
            "Headstart's cache folder is now %s; the old one, %s, could not be moved there "
            "(%s): move it by hand, or delete it",
            new,
            old,
            exc,
        )
        return False
    log.info("moved Headstart's cache folder from %s to %s (this platform's convention)", old, new)
    return True


@functools.cache
def headstart_cache_dir() -> Path:
    """This platform's cache folder for Headstart; settled (and migrated) once a process."""
    return cache_folder()


def headstart_home() -> Path:
    """The local backend's folder (state file, logs, vLLM's CPU build, model folders):
    $HEADSTART_HOME, else Headstart's cache folder."""
    configured = os.environ.get("HEADSTART_HOME")
    return Path(configured).expanduser() if configured else headstart_cache_dir()


def project_cache_root() -> Path:
    """The root of the project stores when the `cacheDir` setting is not given:
    $HEADSTART_CACHE_DIR, else Headstart's cache folder."""
    configured = os.environ.get("HEADSTART_CACHE_DIR")
    return Path(configured).expanduser() if configured else headstart_cache_dir()
