"""Prompts as token ids, encoded here so that vLLM's API server does not have to.

vLLM tokenizes a text prompt on every request, in its one API-server process: for a team
typing against one GPU that is thousands of prompt tokens per keystroke per user, and the
process's main work. A prompt sent as token ids skips it.

Encoding here stays cheap because a prompt is cut where no token can cross, and each
piece's ids are cached under the xxh3 of its text: a keystroke re-encodes only the line
the cursor is in. Where a tokenizer may cut depends on its pre-tokenizer, so the first cut
that is exact on a sample is chosen once per tokenizer:
- after a line break followed by a line with some non-space text (Qwen2's pre-tokenizer
  ends a pre-token at each line break unless only white space follows up to the next);
- before a line break that follows non-space text (GPT-2's, StarCoder's and DeepSeek's
  pre-tokenizers join a line break to the line breaks and indentation after it, never
  to the text before it);
- nowhere: a tokenizer that adds a BOS token or a space before each text (SentencePiece)
  encodes whole prompts.

Token healing (`completion.tokenHealing`) starts here too: the last token of a prompt that
ends mid-word is backed off, and the answer is made to start with its characters, so the
model picks the token that really ends the word (Athiwaratkun et al. 2024; Phan et al.
2024) instead of continuing a partial one it rarely saw split that way in training.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass

from tokenizers import Tokenizer

from server.completion.token_count import Generations, text_key

log = logging.getLogger(__name__)

CUTS = {
    "after a line break": re.compile(r"\n(?=[^\S\r\n]*\S)"),
    "before a line break": re.compile(r"(?<=\S)(?=\r?\n)"),
}
"""Where a prompt may be cut (each match's end), by the pre-tokenizers they suit."""

SAMPLE = (
    'import os\n\n\nclass Shape:\n    """A shape."""\n\n    def area(self) -> float:\n'
    "        return 0.0  # é, 中文\n    \n        \n    x = 1  \n\t\ty = 2\r\n  \r\n"
    "# a comment\nx = [1, 2]\n)\n\t\nif x:\n    pass\n1\n'quoted'\n@decorator\ndef f(): ...\n"
)
"""Code with the line starts a cut must survive: blank lines with and without spaces,
indentation by spaces and tabs, trailing spaces, CRLF, comments, decorators, digits,
quotes and non-ASCII text."""


HEAL_TOKENS = 4
"""The most tokens backed off to heal one prompt's end (a character may take up to 4 bytes)."""


@dataclass(frozen=True)
class Healed:
    """A prompt whose last token was backed off (token healing), and its characters."""

    ids: list[int]
    removed: str


class PromptEncoder:
    """A prompt's token ids as vLLM would make them from the text, cached per piece."""

    def __init__(self, tokenizer: Tokenizer, cache_size: int = 32_768) -> None:
        self.tokenizer = tokenizer
        self.cut = next((cut for cut in CUTS.values() if self._cut_is_exact(SAMPLE, cut)), None)
        self._pieces: Generations[tuple[int, ...]] = Generations(cache_size)
        self.pieces_encoded = 0
        """Pieces the tokenizer has encoded (cache misses), for tests and benches."""
        where = next((name for name, cut in CUTS.items() if cut is self.cut), "never")
        log.info("prompt token ids: prompts are cut into cached pieces %s", where)

    def cached(self) -> int:
        """Prompt pieces whose ids are kept."""
        return len(self._pieces)

    def encode(self, prompt: str) -> list[int] | None:
        """The prompt's ids with the tokenizer's special tokens (as vLLM adds them to a text
        prompt), or None when the tokenizer cannot encode it (the text is sent instead)."""
        try:
            if self.cut is None:
                return list(self.tokenizer.encode(prompt, add_special_tokens=True).ids)
            ids: list[int] = []
            for piece in pieces(prompt, self.cut):
                ids.extend(self._piece_ids(piece))
            return ids
        except TypeError as exc:  # tokenizers refuses text it cannot make UTF-8 (lone surrogates)
            log.debug("prompt token ids: sending text, the tokenizer refused it: %s", exc)
            return None

    def heal(self, prompt: str, middle: str) -> Healed | None:
        """The prompt's ids with its last token(s) backed off, where they spell the end of
        `middle` (the typed part of the line that ends the prompt), and the characters taken
        off, which the answer must then start with. Byte-level tokens that spell part of a
        character are backed off together with the rest of it. None when the prompt does not
        end with `middle`, or no such token ends it."""
        if not middle or not prompt.endswith(middle):
            return None
        ids = self.encode(prompt)
        if ids is None:
            return None
        for back in range(1, min(HEAL_TOKENS, len(ids) - 1) + 1):
            removed = self.tokenizer.decode(ids[-back:], skip_special_tokens=False)
            if "\ufffd" in removed:
                continue  # part of a character: back off the token before it too
            if removed and middle.endswith(removed):
                return Healed(ids[:-back], removed)
            return None
        return None

    def _piece_ids(self, piece: str) -> tuple[int, ...]:
        key = text_key(piece)
        ids = self._pieces.get(key)
        if ids is None:
            ids = tuple(self.tokenizer.encode(piece, add_special_tokens=False).ids)
            self._pieces.put(key, ids)
            self.pieces_encoded += 1
        return ids

    def _cut_is_exact(self, sample: str, cut: re.Pattern[str]) -> bool:
        whole = self.tokenizer.encode(sample, add_special_tokens=True).ids
        joined = [
            token
            for piece in pieces(sample, cut)
            for token in self.tokenizer.encode(piece, add_special_tokens=False).ids
        ]
        return whole == joined


def pieces(text: str, cut: re.Pattern[str]) -> list[str]:
    """`text` cut at the end of each match of `cut`."""
    cuts = [0, *(match.end() for match in cut.finditer(text)), len(text)]
    return [text[start:end] for start, end in itertools.pairwise(cuts) if end > start]
