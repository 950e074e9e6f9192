"""The one place where editor URIs become file paths and back.

Every path from the editor is untrusted: callers ask `inside_roots` before reading.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath
from urllib.parse import quote, unquote, urlsplit


def uri_to_path(uri: str) -> Path | None:
    """The local path of a file:// URI, or None for any other scheme (untitled:, git:, ...)."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    raw = unquote(parts.path)
    if os.name == "nt":
        if raw.startswith("/") and len(raw) > 2 and raw[2] == ":":
            raw = raw[1:]
        if parts.netloc:
            raw = f"//{parts.netloc}{raw}"
        return Path(PureWindowsPath(raw))
    return Path(raw)


def path_to_uri(path: Path | str) -> str:
    """A file:// URI for an absolute path, percent-encoded the way editors write them."""
    resolved = Path(path).absolute()
    posix = resolved.as_posix()
    if not posix.startswith("/"):
        posix = "/" + posix
    return "file://" + quote(posix, safe="/:")


def display_path(path: Path, roots: list[Path]) -> str:
    """The path relative to its workspace root, in forward slashes, as prompts show it."""
    for root in roots:
        if path.is_relative_to(root):
            return PurePosixPath(path.relative_to(root).as_posix()).as_posix()
    return path.name
