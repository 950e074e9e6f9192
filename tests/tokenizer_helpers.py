"""Tokenizers for tests: a tiny one built on the spot, and the real Qwen one when present.

Nothing is downloaded: the real tokenizer is looked for the way the server looks for one
(a local model folder, then the Hugging Face cache), and tests that need it skip without.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from server.backend.local_vllm import headstart_home
from server.completion.prompt import TEMPLATES
from server.completion.token_count import find_tokenizer_file

ROOT = Path(__file__).resolve().parent.parent

SPECIAL_TOKENS = list(TEMPLATES["starcoder2"].stop_tokens)
"""StarCoder2's special tokens, so the tiny tokenizer can stand in for its stop ids."""


def tiny_tokenizer() -> Tokenizer:
    """A byte-level BPE trained on this repository's server code: small, fast, real BPE."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [path.read_text() for path in sorted((ROOT / "server").glob("*.py"))]
    tokenizer.train_from_iterator(corpus, trainer)
    return tokenizer


def save_tiny_tokenizer(folder: Path) -> Path:
    """A model-like folder holding tiny_tokenizer() as tokenizer.json; returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    tiny_tokenizer().save(str(path))
    return path


def real_qwen_tokenizer_file() -> Path:
    """The Qwen2.5(-Coder) tokenizer.json on this machine, or skip the test."""
    candidates = [os.environ.get("HEADSTART_TEST_TOKENIZER", "")]
    for models_dir in (headstart_home() / "models", ROOT / ".gpu" / "models"):
        if models_dir.is_dir():
            candidates += [str(folder) for folder in sorted(models_dir.iterdir())]
    candidates += ["Qwen/Qwen2.5-Coder-1.5B", "Qwen/Qwen2.5-Coder-1.5B-Instruct"]
    for candidate in filter(None, candidates):
        found = find_tokenizer_file(None, candidate)
        if found is not None:
            tokenizer = Tokenizer.from_file(str(found[0]))
            if tokenizer.token_to_id("<|fim_prefix|>") == 151659:
                return found[0]
    pytest.skip("no local Qwen2.5 tokenizer.json (set HEADSTART_TEST_TOKENIZER to one)")
