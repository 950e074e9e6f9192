"""Token healing's constraint checked with llguidance, the library behind vLLM's guidance
backend (and its "auto" one for grammars): the answer must start with the backed-off
characters, and must be able to end with the template's end token, which for an instruct
model is not the tokenizer's EOS. Under a regex it cannot: that is why healed answers ran
on past the line's end on the real model (docs/results/prompt_layout.txt)."""

from __future__ import annotations

import json

import llguidance
import pytest
from tokenizer_helpers import save_tiny_tokenizer
from tokenizers import Tokenizer

from server.backend.client import healing_grammar, starting_with

FORCED = 'x["a\\b"]\t= é'
"""Backed-off characters with what a Lark string must escape, and a non-ASCII letter."""


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tokenizer, llguidance.LLTokenizer]:
    """The tiny StarCoder2-like tokenizer, with llguidance told EOS is `<file_sep>`, as
    vLLM tells it an instruct model's `<|im_end|>`: not the FIM answer's end token."""
    path = save_tiny_tokenizer(tmp_path_factory.mktemp("served"))
    hf = Tokenizer.from_file(str(path))
    eos = hf.token_to_id("<file_sep>")
    return hf, llguidance.LLTokenizer(path.read_text(), eos_token=eos)


def matcher(llt: llguidance.LLTokenizer, grammar: str) -> llguidance.LLMatcher:
    assert not llguidance.LLMatcher.validate_grammar(grammar, llt)
    return llguidance.LLMatcher(llt, grammar)


def end_allowed_after(
    tokenizer: tuple[Tokenizer, llguidance.LLTokenizer], grammar: str, answer: str
) -> bool:
    hf, llt = tokenizer
    m = matcher(llt, grammar)
    assert m.consume_tokens(hf.encode(answer).ids), m.get_error()
    return m.compute_logit_bias()[hf.token_to_id("<|endoftext|>")] != 0


def test_the_regex_masks_the_end_token_and_the_grammar_allows_it(
    tokenizer: tuple[Tokenizer, llguidance.LLTokenizer],
) -> None:
    hf, _ = tokenizer
    end = hf.token_to_id("<|endoftext|>")
    regex = llguidance.LLMatcher.grammar_from_regex(starting_with(FORCED))
    grammar = llguidance.LLMatcher.grammar_from_lark(healing_grammar(FORCED, (end,)))

    assert not end_allowed_after(tokenizer, regex, FORCED + " 1")
    assert end_allowed_after(tokenizer, grammar, FORCED + " 1")


def test_the_grammar_forces_the_backed_off_characters_first(
    tokenizer: tuple[Tokenizer, llguidance.LLTokenizer],
) -> None:
    hf, llt = tokenizer
    end = hf.token_to_id("<|endoftext|>")
    grammar = llguidance.LLMatcher.grammar_from_lark(healing_grammar(FORCED, (end,)))

    at_start = matcher(llt, grammar).compute_logit_bias()
    assert at_start[end] == 0  # no ending before the forced characters
    wrong = matcher(llt, grammar)
    wrong.consume_tokens(hf.encode("y = 1").ids)
    assert wrong.is_error()
    right = matcher(llt, grammar)
    assert right.consume_tokens(hf.encode(FORCED + "\n    return 2").ids)


def test_the_literal_is_a_json_string() -> None:
    """Lark string literals take JSON's escapes; the text comes back unchanged."""
    grammar = healing_grammar(FORCED, (1, 2))
    literal = grammar.removeprefix("start: ").split(" /", 1)[0]
    assert json.loads(literal) == FORCED
    assert grammar.endswith("(<[1]> | <[2]>)?")


def test_the_fake_model_reads_the_grammar_the_server_sends() -> None:
    """The tests' fake honours exactly the grammar above: a forced text with a quote or a
    backslash once made it answer 400, which the server took for a vLLM refusing the
    grammar (promptLayout auto then fell back to the cursor layout for good)."""
    from fake_server import forced_start

    body = {"structured_outputs": {"grammar": healing_grammar(FORCED, (1, 2))}}
    assert forced_start(body) == FORCED
    assert forced_start({"structured_outputs": {"grammar": healing_grammar("f", (7,))}}) == "f"
