"""Key-like values masked out of other files' snippets before they go into a prompt.

A file may be fine to index and still hold a credential on one line (`API_KEY = "sk-…"`,
a pasted token, a private key block). The snippets taken from other files are the part
of a prompt the user did not write at the cursor, so what looks like a credential there
is replaced by a placeholder: known key formats by their shape, and long high-entropy
strings assigned to names such as `api_key`, `token`, `secret` or `password`.
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections import Counter

MASK = "<redacted>"

KEY_FORMATS = re.compile(
    r"""
      AKIA[0-9A-Z]{16}                                   # AWS access key id
    | gh[pousr]_[A-Za-z0-9]{36,}                         # GitHub tokens
    | github_pat_[A-Za-z0-9_]{22,}
    | sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}               # OpenAI, Anthropic
    | xox[abprs]-[A-Za-z0-9-]{10,}                       # Slack
    | AIza[0-9A-Za-z_-]{35}                              # Google API key
    | glpat-[A-Za-z0-9_-]{20,}                           # GitLab
    | -----BEGIN[A-Z ]*PRIVATE\ KEY-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE\ KEY-----|\Z)
    """,
    re.VERBOSE,
)
ASSIGNED = re.compile(
    r"""(?x)
    (?:api[_-]?key|secret|token|passw(?:or)?d|pwd|credentials?|auth|authorization)
    (?:s|_[a-z0-9_]*)?  # the name's end: "tokens", "token_value", not "tokenizer"
    ["']?\s*[:=]\s*[a-z]?["'`](?:bearer\s+)?
    (?P<value>[^"'`\s{}()$<>]{12,})["'`]  # a whole literal: not a template's pieces
    """
)
"""Read on the text lowered (ASCII only, so offsets stay the same): a case-insensitive
alternation costs Python's `re` several times more."""
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
MIN_ENTROPY_BITS = 3.0
"""Bits per character above which a value assigned to such a name counts as a key: a
32-character hex key has 4.0, base64 keys 4.3 and more, a repeated word such as
`hunter2hunter2` 2.8. Placeholders such as `change-me-please` (3.25) are masked too,
which costs the model nothing."""


@functools.lru_cache(maxsize=1024)
def mask_secrets(text: str) -> str:
    """`text` with key-like values replaced by MASK. Cached: the same definitions come
    back in the prompts of keystroke after keystroke."""
    if not text:
        return text
    text = KEY_FORMATS.sub(MASK, text)
    pieces: list[str] = []
    kept = 0
    for found in ASSIGNED.finditer(text.translate(_ASCII_LOWER)):
        start, end = found.span("value")
        value = text[start:end]
        if value == MASK or _entropy_bits(value) < MIN_ENTROPY_BITS:
            continue
        pieces += (text[kept:start], MASK)
        kept = end
    return "".join(pieces) + text[kept:] if pieces else text


def _entropy_bits(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
