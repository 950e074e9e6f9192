"""The fake model as an oracle (fake_openai.py --oracle DIR): it answers with the text that
really follows the cursor in the workspace's files, at a chosen share of the places asked.

Why: a fake that is never right makes a bench recording unlike a real model's. Nobody
accepts its suggestions or types through them, so nearly every key asks the model and the
cursor never jumps over an accepted block, and what prompt changes cost (the prefix-cache
simulation over a recording, `benchmarks/load/prompt_cache_sim.py`) comes out unlike the GPU's.
The bench's users retype real lines of real files (`server.bench.typing_sessions`), so the
file on disk holds what the user is about to type: the oracle finds the typed text in it
and answers with what follows.

The prompt names its file (`<|file_sep|>PATH`, the last before `<|fim_prefix|>`) and ends
its prefix with the typed text. Whether a place gets the truth is drawn from the place
(the same place, the same answer, as a greedy model gives): `right_share` of them do. The
others get the truth's first 0-4 words and then `wrong`, as a real model is often right
for a word or two and then goes its own way (so the user types along it for a while and
the server's suggestion cache answers those keys). The answer runs on past the line; the
server's stop rules cut it.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

FIM_PREFIX, FIM_SUFFIX, FILE_SEP = "<|fim_prefix|>", "<|fim_suffix|>", "<|file_sep|>"
FIM_MIDDLE = "<|fim_middle|>"
TAIL_CHARS = 400
"""How much of the prefix's end is looked for in the file: enough to be unique."""
ANSWER_CHARS = 800
"""How much of the file after the cursor an answer holds: more than a block."""
WORD = re.compile(r"\s*(?:\w+|[^\w\s]+)")
"""A word of code, with the spaces before it: an identifier, or a run of punctuation."""


class Oracle:
    def __init__(self, root: Path, right_share: float, wrong: str) -> None:
        self.root = root.resolve()
        self.right_share = right_share
        self.wrong = wrong
        self._files: dict[str, str | None] = {}

    def answer(self, prompt: str) -> str | None:
        """What follows the prompt's cursor in its file, or at a place drawn wrong its
        first words and then `wrong`; None for a prompt that is not a fill-in-the-middle
        one of a file here."""
        if prompt.count(FIM_PREFIX) != 1 or FIM_SUFFIX not in prompt:
            return None
        head, rest = prompt.split(FIM_PREFIX)
        prefix = rest.split(FIM_SUFFIX, 1)[0]
        if FIM_MIDDLE in rest:  # lineStart layout: the typed part follows the middle marker
            prefix += rest.rsplit(FIM_MIDDLE, 1)[1]
        path = head.rsplit(FILE_SEP, 1)[-1].split("\n", 1)[0].strip()
        text = self._file(path)
        if text is None or not prefix:
            return None
        tail = prefix[-TAIL_CHARS:]
        found = text.find(tail)
        if found < 0:
            return None
        at = found + len(tail)
        truth = text[at : at + ANSWER_CHARS]
        draw = zlib.crc32(f"{path}:{at}".encode())
        if draw % 10_000 < self.right_share * 10_000:
            return truth
        words = WORD.findall(truth.split("\n", 1)[0])[: draw // 10_000 % 5]
        return "".join(words) + self.wrong

    def _file(self, path: str) -> str | None:
        """The file's text, read once; None outside the root or unreadable."""
        if path not in self._files:
            file = (self.root / path).resolve()
            try:
                inside = file.is_relative_to(self.root)
                self._files[path] = file.read_text(encoding="utf-8") if inside else None
            except (OSError, UnicodeDecodeError):
                self._files[path] = None
        return self._files[path]
