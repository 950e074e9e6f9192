"""The line-start prompt layout and token healing, through the real server over LSP: what
the backend is sent, and that the editor is shown the same kind of text as before (what
follows the cursor), whatever the prompt looked like."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import fast_settings, first_completion, start_session
from fake_openai import FakeBackend
from fake_server import forced_start
from lsp_helpers import cursor_at, logs, open_document, suggestion
from pytest_lsp import LanguageClient
from tokenizer_helpers import save_tiny_tokenizer
from tokenizers import Tokenizer

TYPED = "def total(items):\n    return su█\n"


TYPED_SUM = "def total(items):\n    return sum█\n"


async def healed_completion(
    client: LanguageClient,
    backend: FakeBackend,
    workspace: Path,
    served: Path,
    answer: str,
    typed: str,
) -> tuple[str, dict[str, Any]]:
    """`first_completion` with StarCoder2's template, the lineStart layout and healing on,
    the backend serving a model with the tokenizer `served` and answering `answer`."""
    backend.script([], default_text=answer, tokenizer=served)
    settings = healing_settings(backend, served)
    return await first_completion(client, backend, workspace, settings, typed)


def healing_settings(backend: FakeBackend, served: Path) -> dict[str, object]:
    """StarCoder2's template with the served model's tokenizer, lineStart and healing on."""
    return fast_settings(
        backend.url,
        template="starcoder2",
        tokenizer=str(served),
        promptLayout="lineStart",
        tokenHealing=True,
    )


@pytest.mark.parametrize(
    ("layout", "prompt_end"),
    [
        ("cursor", "    return su<|fim_suffix|>\n<|fim_middle|>"),
        ("lineStart", "<|fim_suffix|>\n<|fim_middle|>    return su"),
    ],
)
async def test_the_layout_moves_the_typed_part_and_the_suggestion_stays(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, layout: str, prompt_end: str
) -> None:
    """Either way the model's answer continues after the typed part, so the editor gets
    the same suggestion: the text after the cursor."""
    fake.script([], default_text="m(items)\n")
    settings = fast_settings(fake.url, template="qwen", promptLayout=layout)
    shown, event = await first_completion(fresh, fake, workspace, settings, TYPED)

    assert shown == "m(items)"
    prompt = event["body"]["prompt"]
    assert isinstance(prompt, str) and prompt.endswith(prompt_end)
    assert "structured_outputs" not in event["body"]


async def test_a_healed_prompt_makes_the_answer_start_with_the_backed_off_characters(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    """The served model's tokenizer is here (a byte-level BPE, StarCoder2's special
    tokens): the prompt goes as ids without the typed part's last token, the backend is
    told to start its answer with that token's characters (the fake, like vLLM, does),
    and the editor is shown what follows them, as without healing."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    shown, event = await healed_completion(fresh, fake, workspace, served, "(items)\n", TYPED_SUM)

    assert shown == "(items)"
    removed = forced_start(event["body"])
    assert removed and "    return sum".endswith(removed)
    prompt = event["body"]["prompt"]
    assert isinstance(prompt, list)
    sent = Tokenizer.from_file(str(served)).decode(prompt, skip_special_tokens=False)
    assert (sent + removed).endswith("<fim_suffix>\n<fim_middle>    return sum")
    assert event["text"] == removed + "(items)\n"  # what the "model" streamed
    assert "token healing: on for " in logs(fresh)
    # a grammar that lets the answer end with the template's end tokens, named by id
    end_of_text = Tokenizer.from_file(str(served)).token_to_id("<|endoftext|>")
    assert f"<[{end_of_text}]>" in event["body"]["structured_outputs"]["grammar"]


async def test_a_backend_refusing_the_grammar_heals_with_the_regex(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    """vLLM started with the xgrammar backend cannot read the Lark grammar (its EBNF has
    no special tokens) and answers 400: the same request goes again with the regex, the
    suggestion comes, and the log says how to start vLLM instead."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    fake.script(
        [],
        default_text="(items)\n",
        tokenizer=served,
        refuse_fields=["structured_outputs.grammar"],
    )
    await start_session(fresh, "vscode", workspace, healing_settings(fake, served))
    text, position = cursor_at(TYPED_SUM)
    uri = open_document(fresh, workspace / "total.py", text)

    assert await suggestion(fresh, uri, position) == "(items)"
    refused, healed = fake.events()
    assert refused["status"] == 400 and "grammar" in refused["body"]["structured_outputs"]
    assert "    return sum".endswith(forced_start(healed["body"]))
    assert set(healed["body"]["structured_outputs"]) == {"regex"}
    assert "refuses token healing's grammar" in logs(fresh)


async def test_healing_leaves_a_prompt_without_typed_part_alone(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    """Only indentation typed: nothing after the middle marker, so nothing to heal."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    answer, typed = "return sum(items)\n", "def total(items):\n    █\n"
    shown, event = await healed_completion(fresh, fake, workspace, served, answer, typed)

    assert shown == "return sum(items)"
    assert "structured_outputs" not in event["body"]
    served_tokenizer = Tokenizer.from_file(str(served))
    sent = served_tokenizer.decode(event["body"]["prompt"], skip_special_tokens=False)
    assert sent.endswith("    <fim_suffix>\n<fim_middle>")


@pytest.mark.parametrize("flavor", ["sglang", "trtllm"])
async def test_sglang_is_healed_by_its_regex_field_and_tensorrt_llm_not_at_all(
    fresh: LanguageClient, tmp_path: Path, workspace: Path, flavor: str
) -> None:
    """SGLang takes the constraint as its own `regex` field. TensorRT-LLM refuses fields it
    does not know (and tokenizes for itself), so its prompt keeps the whole typed part
    and the suggestion still comes."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    with FakeBackend(extra_args=["--flavor", flavor]) as engine:
        answer = "(items)\n"
        shown, event = await healed_completion(fresh, engine, workspace, served, answer, TYPED_SUM)

        assert shown == "(items)"
    body = event["body"]
    assert "structured_outputs" not in body
    if flavor == "sglang":
        assert "    return sum".endswith(forced_start(body)) and body["regex"]
    else:
        assert "regex" not in body
        assert body["prompt"].endswith("<fim_middle>    return sum")
        assert "token healing: off: no tokenizer of " in logs(fresh)
