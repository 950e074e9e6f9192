"""Whether a vLLM backend's tokenizer is the one found here, checked once per model.

The local tokenizer is found by the model's name or folder, or named by the
`completion.tokenizer` setting; the backend may serve something else under that name (a
fine-tune with added tokens, a server restarted on another model, a setting pointing at
the wrong file). Ids made here would then be another vocabulary's words: the prompt, the
stop token ids and the decoding of a resumed stream would all go wrong, silently. vLLM
says which ids it makes of a text (`/tokenize`), so one probe settles it.
"""

from __future__ import annotations

import logging
from typing import Literal, Protocol

from server.completion.prompt_tokens import SAMPLE
from server.completion.token_count import TokenCounter

log = logging.getLogger(__name__)

PROBE = SAMPLE + "<|endoftext|><|fim_prefix|>a<|fim_suffix|>b<|fim_middle|><fim_prefix>"
"""Code with the awkward line starts of `SAMPLE`, then the special tokens of common
fill-in-the-middle templates (a vocabulary with added tokens encodes them differently)."""


class Tokenizes(Protocol):
    async def tokenize(self, text: str) -> list[int] | None: ...


Agreement = Literal["same", "different", "unknown"]
"""What one probe says of the backend's tokenizer against the local one: "unknown" when the
backend does not tokenize on request (or there is no local tokenizer to compare)."""


async def compare_tokenizers(backend: Tokenizes, counter: TokenCounter) -> Agreement:
    """Whether the backend makes the same ids of `PROBE` as the local tokenizer; the
    differences said once in the log."""
    if counter.tokenizer is None:
        return "unknown"
    theirs = await backend.tokenize(PROBE)
    if theirs is None:
        log.info(
            "tokenizer check: the backend does not tokenize on request (/tokenize); trusting %s",
            counter.source,
        )
        return "unknown"
    ours = counter.tokenizer.encode(PROBE, add_special_tokens=True).ids
    if ours == theirs:
        log.info("tokenizer check: the backend's tokenizer is %s", counter.source)
        return "same"
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), None)
    where = f"from id {first}" if first is not None else "in length"
    log.warning(
        "tokenizer check: the backend's tokenizer is not %s (a probe text's ids differ %s: "
        "%d ids there, %d here); prompts go as text and token counts are estimated. "
        "Set completion.tokenizer to the served model's tokenizer.json",
        counter.source,
        where,
        len(theirs),
        len(ours),
    )
    return "different"


async def backend_agrees(backend: Tokenizes, counter: TokenCounter) -> bool:
    """False when the backend makes other ids of `PROBE` than the local tokenizer; True
    when they are the same or the backend cannot say."""
    return await compare_tokenizers(backend, counter) != "different"
