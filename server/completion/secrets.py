"""The masking every prompt part goes through: `cache.secrets` finds the credentials
(gitleaks' rules plus generic ones) and replaces them with `<redacted>`. Other files'
snippets are masked where the context builder cuts them (`ProjectFiles`); this module masks
what the request path adds itself: the open document's prefix and suffix, and refactor
prompts' selections."""

from __future__ import annotations

import functools

from cache.secrets import MASK, mask_piece, mask_text, mask_window, restore_secrets, secret_values

__all__ = [
    "MASK",
    "mask_document",
    "mask_piece",
    "mask_secrets",
    "mask_snippet",
    "restore_secrets",
    "secret_values",
]


@functools.lru_cache(maxsize=1024)
def mask_secrets(text: str, path: str = "") -> str:
    """`text` (of the file at `path`, whose syntax the rules read) with key-like values
    replaced by MASK. Cached: the same pieces come back keystroke after keystroke."""
    return mask_text(text, path) if text else text


def mask_document(prefix: str, suffix: str, document: str, path: str) -> tuple[str, str]:
    """The current file's prefix and suffix masked, but for what is being typed at the
    cursor (`cache.secrets.mask_window`)."""
    return mask_window(prefix, suffix, document, path)


def mask_snippet(text: str, path: str, current_path: str, document: str) -> str:
    """A snippet masked: another file's (already cut from masked text, so this is a cached
    second look), or a piece of the current file (its imports, its tail), whose
    private-key blocks are known from the whole document."""
    if path == current_path:
        return mask_piece(text, document, path)
    return mask_secrets(text, path)
