"""API keys of the job service: which user a key belongs to, without keeping the key.

A key is 32 random bytes, so its SHA-256 is as good as a slow hash and lets the keys file
hold digests only (`USER:sha256:HEX`, one a line, `#` comments). A presented key is hashed
and compared with every digest by hmac.compare_digest, never stopping early, so the time
taken says nothing about which digest came close.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

KEY_PREFIX = "hsk_"
_USER = re.compile(r"^[A-Za-z0-9._@+-]{1,64}$")
_LINE = re.compile(r"^(?P<user>[^:\s]+):sha256:(?P<digest>[0-9a-fA-F]{64})$")


class KeysError(Exception):
    """The keys file or variable cannot be read: where, and why."""


@dataclass(frozen=True)
class KeyEntry:
    user: str
    digest: str

    @property
    def key_id(self) -> str:
        """A name for the key in limits and logs that is not the key (a digest prefix)."""
        return self.digest[:16]


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_line(user: str, key: str) -> str:
    """The keys file's line for a key: what is kept of it."""
    if not _USER.match(user):
        raise KeysError(f"user name {user!r}: use letters, digits and ._@+- (1-64 characters)")
    return f"{user}:sha256:{digest_of(key)}"


def parse_entries(text: str, source: str) -> list[KeyEntry]:
    """Entries from lines (or comma-separated parts); a bad one names its line."""
    entries: list[KeyEntry] = []
    for number, line in enumerate(text.splitlines(), 1):
        for part in line.split(","):
            part = part.split("#", 1)[0].strip()
            if not part:
                continue
            match = _LINE.match(part)
            if match is None or not _USER.match(match["user"]):
                raise KeysError(f"{source}:{number}: not USER:sha256:HEX (64 hex digits)")
            entries.append(KeyEntry(match["user"], match["digest"].lower()))
    return entries


class KeyRing:
    """The valid keys: the file's (re-read when its mtime or size changes) and the variable's."""

    def __init__(self, keys_file: Path | None, inline: str = "") -> None:
        self.keys_file = keys_file
        self._inline = parse_entries(inline, "HEADSTART_AIAPI_KEYS")
        self._from_file: list[KeyEntry] = []
        self._stamp: tuple[int, int] | None = None
        self._reload(strict=True)
        if not self.entries():
            raise KeysError(
                "no API keys: make one with `headstart aiapi key USER --keys-file FILE` and "
                "set HEADSTART_AIAPI_KEYS_FILE (or --keys-file)"
            )

    def entries(self) -> list[KeyEntry]:
        return [*self._inline, *self._from_file]

    def user_of(self, key: str) -> KeyEntry | None:
        """The entry whose digest matches, comparing with every entry in constant time."""
        self._reload(strict=False)
        presented = digest_of(key)
        found: KeyEntry | None = None
        for entry in self.entries():
            if hmac.compare_digest(presented, entry.digest) and found is None:
                found = entry
        return found

    def _reload(self, *, strict: bool) -> None:
        if self.keys_file is None:
            return
        try:
            status = self.keys_file.stat()
            stamp = (status.st_mtime_ns, status.st_size)
            if stamp == self._stamp:
                return
            entries = parse_entries(self.keys_file.read_text(encoding="utf-8"), str(self.keys_file))
        except (OSError, UnicodeDecodeError, KeysError) as exc:
            if strict:
                raise KeysError(f"{self.keys_file}: {exc}") from exc
            log.error("keys file %s: %s; keeping the keys read before", self.keys_file, exc)
            return
        self._from_file, self._stamp = entries, stamp
        log.info("%d API key(s) from %s", len(entries), self.keys_file)


def append_key(keys_file: Path, line: str) -> None:
    """Add a line to the keys file, creating it readable by its owner only."""
    keys_file.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(keys_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as out:
        out.write(line + "\n")
