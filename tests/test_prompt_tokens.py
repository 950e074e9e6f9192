"""Prompts as token ids: the same ids the tokenizer makes of the whole text, made a piece
at a time, and sent to a vLLM backend when the model's tokenizer is here."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fast_settings, first_completion, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, suggestion, wait_for_log
from pytest_lsp import LanguageClient
from tokenizer_helpers import (
    ROOT,
    real_qwen_tokenizer_file,
    save_tiny_tokenizer,
    tiny_tokenizer,
)
from tokenizers import Tokenizer, processors

from server.completion.prompt import TEMPLATES
from server.completion.prompt_tokens import CUTS, PromptEncoder, pieces

CODE = [path.read_text() for path in sorted((ROOT / "server").rglob("*.py"))][:60]


@pytest.fixture(scope="module")
def qwen() -> Tokenizer:
    return Tokenizer.from_file(str(real_qwen_tokenizer_file()))


def fim_prompts(texts: list[str]) -> list[str]:
    """Qwen FIM prompts cut at many places of real files, with another file as context."""
    template = TEMPLATES["qwen"]
    prompts = []
    for n, text in enumerate(texts):
        other = texts[(n + 1) % len(texts)]
        for cut in range(0, len(text), max(1, len(text) // 7)):
            prompts.append(
                template.prompt(
                    repo_name="headstart",
                    snippets=[("server/other.py", other[:3000])],
                    file_path="server/this.py",
                    prefix=text[:cut],
                    suffix=text[cut : cut + 1500],
                ).text
            )
    return prompts


def test_pieces_join_into_the_text() -> None:
    text = "import os\n\n\ndef f():\n    return 1  \n  \n# note\r\n\tx = 2"
    assert pieces(text, CUTS["after a line break"]) == [
        "import os\n\n\n",
        "def f():\n",
        "    return 1  \n  \n",
        "# note\r\n",
        "\tx = 2",
    ]
    assert pieces(text, CUTS["before a line break"]) == [
        "import os",
        "\n\n\ndef f():",
        "\n    return 1  \n  \n# note",
        "\r\n\tx = 2",
    ]


def test_qwen_prompts_by_piece_are_the_whole_texts_ids(qwen: Tokenizer) -> None:
    encoder = PromptEncoder(qwen)
    assert encoder.cut is CUTS["after a line break"]
    for prompt in fim_prompts(CODE):
        assert encoder.encode(prompt) == qwen.encode(prompt, add_special_tokens=True).ids


def test_a_gpt2_style_tokenizer_is_cut_before_line_breaks() -> None:
    """GPT-2's pre-tokenizer joins a line break to the indentation after it."""
    tokenizer = tiny_tokenizer()
    encoder = PromptEncoder(tokenizer)
    assert encoder.cut is CUTS["before a line break"]
    for prompt in fim_prompts(CODE):
        assert encoder.encode(prompt) == tokenizer.encode(prompt, add_special_tokens=True).ids


def test_a_keystroke_encodes_only_the_block_it_is_in(qwen: Tokenizer) -> None:
    encoder = PromptEncoder(qwen)
    text = max(CODE, key=len)
    middle = text.index("\ndef ", len(text) // 2) + 5
    before = encoder.encode(text[:middle] + text[middle:])
    encoded = encoder.pieces_encoded
    after = encoder.encode(text[:middle] + "x" + text[middle:])

    assert before is not None and after is not None
    assert encoder.pieces_encoded == encoded + 1
    assert after == qwen.encode(text[:middle] + "x" + text[middle:]).ids


def test_a_tokenizer_that_adds_a_bos_token_encodes_whole_prompts() -> None:
    tokenizer = tiny_tokenizer()
    tokenizer.add_special_tokens(["<s>"])
    bos = tokenizer.token_to_id("<s>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", bos)]
    )
    encoder = PromptEncoder(tokenizer)

    assert encoder.cut is None
    for prompt in fim_prompts(CODE[:3]):
        ids = encoder.encode(prompt)
        assert ids == tokenizer.encode(prompt, add_special_tokens=True).ids
        assert ids is not None and ids[0] == bos


def test_text_the_tokenizer_refuses_is_sent_as_text(qwen: Tokenizer) -> None:
    assert PromptEncoder(qwen).encode("x = '\ud800'\n") is None  # a lone surrogate


@pytest.mark.parametrize("token_ids", [True, False])
async def test_a_vllm_backend_gets_the_prompt_as_the_tokenizers_ids(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, token_ids: bool
) -> None:
    """The fake says it is vLLM; with the model's tokenizer set, the prompt goes as its ids
    (the text when `backend.promptTokenIds` is off). The cursor layout, so the whole prompt
    is sent (`promptLayout` auto would heal it: tests/test_prompt_layout_auto.py)."""
    tokenizer_file = real_qwen_tokenizer_file()
    fake.script([], tokenizer=tokenizer_file)  # the served model's, as vLLM's /tokenize says
    settings = fast_settings(fake.url, tokenizer=str(tokenizer_file), promptLayout="cursor")
    settings["backend"]["promptTokenIds"] = token_ids  # type: ignore[index]
    typed = "def total(items):\n    return █\n"
    _, event = await first_completion(fresh, fake, workspace, settings, typed)
    prompt = event["body"]["prompt"]
    if not token_ids:
        assert isinstance(prompt, str) and prompt.endswith("return <|fim_suffix|>\n<|fim_middle|>")
        return
    qwen = Tokenizer.from_file(str(tokenizer_file))
    assert isinstance(prompt, list)
    decoded = qwen.decode(prompt, skip_special_tokens=False)
    assert decoded.endswith("return <|fim_suffix|>\n<|fim_middle|>")
    assert prompt == qwen.encode(decoded, add_special_tokens=True).ids
    assert "tokenizer check: the backend's tokenizer is " in logs(fresh)


async def test_a_backend_with_another_tokenizer_gets_text_prompts(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    """The tokenizer found here is Qwen's, but the backend serves another vocabulary under
    the same name: its ids would be another model's words, so prompts go as text, without
    stop token ids, and the log says why once."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    fake.script([], default_text="sum(items)\n", tokenizer=served)
    settings = fast_settings(fake.url, tokenizer=str(real_qwen_tokenizer_file()))
    await start_session(fresh, "vscode", workspace, settings)
    for name in ("total", "count"):
        text, position = cursor_at(f"def {name}(items):\n    return █\n")
        uri = open_document(fresh, workspace / f"{name}.py", text)
        assert await suggestion(fresh, uri, position) == "sum(items)"

    for event in fake.events():
        assert isinstance(event["body"]["prompt"], str)
        assert "stop_token_ids" not in event["body"]
    said = logs(fresh)
    assert said.count("tokenizer check: the backend's tokenizer is not ") == 1


async def test_a_backend_that_refuses_token_ids_gets_text_from_then_on(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """It calls itself vLLM but answers a prompt of ids with 400: the same request goes
    again as text, and once that works every later prompt is text, said once in the log."""
    settings = fast_settings(fake.url, tokenizer=str(real_qwen_tokenizer_file()))
    await start_session(fresh, "vscode", workspace, settings)
    await wait_for_log(fresh, "indexed ", timeout=10)  # both prompts get the same snippets
    fake.script([], default_text="sum(items)\n", refuse_token_ids=True)
    text, position = cursor_at("def total(items):\n    return █\n")
    uri = open_document(fresh, workspace / "total.py", text)
    assert await suggestion(fresh, uri, position) == "sum(items)"

    text, position = cursor_at("def count(items):\n    return █\n")
    uri = open_document(fresh, workspace / "count.py", text)
    assert await suggestion(fresh, uri, position) == "sum(items)"

    refused, as_text, later = fake.events()
    assert isinstance(refused["body"]["prompt"], list) and refused["status"] == 400
    assert as_text["body"]["prompt"] == later["body"]["prompt"].replace("count", "total")
    assert isinstance(later["body"]["prompt"], str)
    said = await wait_for_log(fresh, "refuses prompts as token ids")
    assert said.count("refuses prompts as token ids") == 1


@pytest.mark.parametrize("flavor", ["sglang", "trtllm"])
async def test_sglang_gets_vllms_fields_and_tensorrt_llm_none(
    fresh: LanguageClient, workspace: Path, flavor: str
) -> None:
    """SGLang takes vLLM's completion fields as vLLM does (its protocol.py): the prompt as
    token ids, the keystroke's priority, stop token ids. TensorRT-LLM answers fields it does
    not know with 400, so it gets a plain OpenAI body."""
    tokenizer_file = real_qwen_tokenizer_file()
    with FakeBackend(extra_args=["--flavor", flavor]) as engine:
        engine.script([], default_text="sum(items)\n", tokenizer=tokenizer_file)
        settings = fast_settings(engine.url, tokenizer=str(tokenizer_file))
        typed = "def total(items):\n    return █\n"
        shown, event = await first_completion(fresh, engine, workspace, settings, typed)

        assert shown == "sum(items)"
    body = event["body"]
    if flavor == "sglang":
        assert isinstance(body["prompt"], list) and body["priority"] == 0
        assert body["stop_token_ids"] and body["return_token_ids"] is True
    else:
        assert isinstance(body["prompt"], str)
        assert not {"priority", "stop_token_ids", "return_token_ids"} & set(body)


@pytest.mark.parametrize(
    ("typed", "removed"),
    [
        ("    x = self.conf", ".conf"),  # mid-word: the partial token goes
        ("    return ", " "),  # a trailing space: the model would join it to the next word
        ('    s = "\U0001d518', "\U0001d518"),  # one character in two byte tokens: both go
    ],
)
def test_healing_backs_off_the_last_whole_characters_token(
    qwen: Tokenizer, typed: str, removed: str
) -> None:
    encoder = PromptEncoder(qwen)
    prompt = TEMPLATES["qwen"].prompt(
        repo_name="r",
        file_path="a.py",
        prefix=f"def f():\n{typed}",
        suffix="\n",
        layout="lineStart",
    )
    healed = encoder.heal(prompt.text, prompt.middle)
    assert healed is not None and healed.removed == removed
    whole = qwen.encode(prompt.text, add_special_tokens=True).ids
    assert healed.ids == whole[: len(healed.ids)] and len(healed.ids) < len(whole)
    assert qwen.decode(healed.ids, skip_special_tokens=False) + removed == prompt.text


def test_nothing_is_healed_without_a_typed_part_at_the_prompts_end(qwen: Tokenizer) -> None:
    encoder = PromptEncoder(qwen)
    assert encoder.heal("<|fim_middle|>", "") is None
    assert encoder.heal("<|fim_middle|>x = a", "y") is None
