"""The fake model's vocabulary: token ids that spell their text (so any id decodes without
a table), prompt token ids, and the cut of an answer into chunks as vLLM would stream it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

PROMPT_PIECE = 4  # characters per prompt "token" in prompt_token_ids


@functools.lru_cache(maxsize=4)
def load_tokenizer(path: str) -> Any:
    from tokenizers import Tokenizer  # only scripts that name a tokenizer need it

    return Tokenizer.from_file(path)


COMPACT_ALPHABET = "\n\t" + "".join(map(chr, range(32, 127)))
"""The characters of pieces spelled compactly: printable ASCII, newline and tab."""
_COMPACT_INDEX = {c: i + 1 for i, c in enumerate(COMPACT_ALPHABET)}  # 0: no character
_COMPACT_BASE = len(COMPACT_ALPHABET) + 1
COMPACT_CHARS = 4
SPELLED_IN_BYTES = 1 << 31
"""Ids at or above this spell their piece's UTF-8 bytes; below it, up to COMPACT_CHARS
characters of COMPACT_ALPHABET in base 98, small like a real vocabulary's ids (which
vllm-router, parsing prompts as 32-bit signed ints, requires)."""


def token_id(piece: str, generated: bool) -> int:
    """The fake's vocabulary: a token's id spells its text (so any id decodes without a
    table, across restarts and replicas) and says whether the model generated it (the
    low bit)."""
    if len(piece) <= COMPACT_CHARS and all(c in _COMPACT_INDEX for c in piece):
        code = 0
        for c in piece:
            code = code * _COMPACT_BASE + _COMPACT_INDEX[c]
        return (code << 1) | int(generated)
    return SPELLED_IN_BYTES + ((int.from_bytes(piece.encode("utf-8"), "big") << 1) | int(generated))


def token_text(token: int) -> tuple[str, bool]:
    generated = bool(token & 1)
    if token < SPELLED_IN_BYTES:
        code, chars = token >> 1, []
        while code:
            code, digit = divmod(code, _COMPACT_BASE)
            chars.append(COMPACT_ALPHABET[digit - 1])
        return "".join(reversed(chars)), generated
    value = (token - SPELLED_IN_BYTES) >> 1
    data = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return data.decode("utf-8", "replace"), generated


def prompt_token_ids(prompt: str) -> list[int]:
    return [
        token_id(prompt[i : i + PROMPT_PIECE], False) for i in range(0, len(prompt), PROMPT_PIECE)
    ]


def plan_chunks(
    text: str, stop: Sequence[str], max_tokens: int | None, chunk_chars: int
) -> tuple[list[str], str]:
    """Cut the text like vLLM would, with one "token" per ``chunk_chars`` characters.

    A stop string ends the text (it is left out) with finish_reason "stop" only if the
    token that completes it is within max_tokens; otherwise, and whenever the text has
    more tokens than max_tokens, it ends after max_tokens tokens with "length".
    """
    chunks = [text[i : i + chunk_chars] for i in range(0, len(text), chunk_chars)]
    found = [(i + len(s), i) for s in stop if s and (i := text.find(s)) >= 0]
    if found:
        end, start = min(found)
        if max_tokens is None or -(-end // chunk_chars) <= max_tokens:
            cut = text[:start]
            return [cut[i : i + chunk_chars] for i in range(0, len(cut), chunk_chars)], "stop"
    if max_tokens is not None and len(chunks) > max_tokens:
        return chunks[:max_tokens], "length"
    return chunks, "stop"
