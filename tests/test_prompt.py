"""Prompt templates: golden prompts per family, stable order, stops, choice by model name."""

from __future__ import annotations

import logging
import os
from typing import get_args

import pytest
from tokenizer_helpers import real_qwen_tokenizer_file, tiny_tokenizer
from tokenizers import Tokenizer

from server.backend.client import ModelInfo
from server.completion.prompt import (
    TEMPLATES,
    choose_template,
    family_for_model,
    path_comment,
)
from server.completion.request import WINDOW_SLACK, context_that_fits
from server.completion.token_count import TokenCounter
from server.config import TemplateName

SNIPPETS = (
    ("pkg/models.py", "class Item:\n    price: float\n"),
    ("pkg/util.py", "def total(items):\n    return sum(i.price for i in items)"),
)
PREFIX = "from pkg.util import total\n\ndef f(items):\n    return "
SUFFIX = "\n\nprint(f([]))\n"
MODELS = "# pkg/models.py\nclass Item:\n    price: float\n\n"
UTIL = "# pkg/util.py\ndef total(items):\n    return sum(i.price for i in items)\n\n"
CURRENT = "# pkg/app.py\n"

BEGIN, HOLE, END = (f"<\uff5cfim\u2581{name}\uff5c>" for name in ("begin", "hole", "end"))
"""DeepSeek-Coder's FIM tokens (their bars are FULLWIDTH VERTICAL LINEs)."""

GOLDEN = {
    "qwen": (
        "<|repo_name|>demo\n"
        "<|file_sep|>pkg/models.py\nclass Item:\n    price: float\n"
        "<|file_sep|>pkg/util.py\ndef total(items):\n    return sum(i.price for i in items)\n"
        "<|file_sep|>pkg/app.py\n"
        f"<|fim_prefix|>{PREFIX}<|fim_suffix|>{SUFFIX}<|fim_middle|>"
    ),
    "starcoder2": (
        "<repo_name>demo"
        "<file_sep>pkg/models.py\nclass Item:\n    price: float\n"
        "<file_sep>pkg/util.py\ndef total(items):\n    return sum(i.price for i in items)\n"
        f"<file_sep><fim_prefix>pkg/app.py\n{PREFIX}<fim_suffix>{SUFFIX}<fim_middle>"
    ),
    "deepseek": f"{BEGIN}{MODELS}{UTIL}{CURRENT}{PREFIX}{HOLE}{SUFFIX}{END}",
    "codellama": f"<PRE> {MODELS}{UTIL}{CURRENT}{PREFIX} <SUF>{SUFFIX} <MID>",
    "codestral": f"[SUFFIX]{SUFFIX}[PREFIX]{MODELS}{UTIL}{CURRENT}{PREFIX}",
}

WITHOUT_SNIPPETS = {
    "qwen": f"<|repo_name|>demo\n<|file_sep|>pkg/app.py\n<|fim_prefix|>{PREFIX}"
    f"<|fim_suffix|>{SUFFIX}<|fim_middle|>",
    "starcoder2": f"<repo_name>demo<file_sep><fim_prefix>pkg/app.py\n{PREFIX}"
    f"<fim_suffix>{SUFFIX}<fim_middle>",
    "deepseek": f"{BEGIN}{CURRENT}{PREFIX}{HOLE}{SUFFIX}{END}",
    "codellama": f"<PRE> {PREFIX} <SUF>{SUFFIX} <MID>",
    "codestral": f"[SUFFIX]{SUFFIX}[PREFIX]{PREFIX}",
}


@pytest.mark.parametrize("family", sorted(GOLDEN))
def test_golden_prompt_with_two_snippets(family: str) -> None:
    text = TEMPLATES[family].render(
        repo_name="demo", snippets=SNIPPETS, file_path="pkg/app.py", prefix=PREFIX, suffix=SUFFIX
    )
    assert text == GOLDEN[family]


@pytest.mark.parametrize("family", sorted(TEMPLATES))
def test_snippet_text_is_exactly_what_render_adds(family: str) -> None:
    template = TEMPLATES[family]
    text = template.render(
        repo_name="demo", snippets=SNIPPETS, file_path="pkg/app.py", prefix=PREFIX, suffix=SUFFIX
    )
    pieces = "".join(template.snippet(path, snippet) for path, snippet in SNIPPETS)
    assert pieces in text
    rest = text.replace(pieces, "", 1)
    if family in ("codellama", "codestral"):  # they name the current file only after others
        rest = rest.replace(path_comment("pkg/app.py"), "", 1)
    assert rest == WITHOUT_SNIPPETS[family]


@pytest.mark.parametrize("family", sorted(WITHOUT_SNIPPETS))
def test_golden_prompt_of_the_current_file_alone(family: str) -> None:
    prompt = TEMPLATES[family].prompt(
        repo_name="demo", file_path="pkg/app.py", prefix=PREFIX, suffix=SUFFIX
    )
    assert prompt.text == WITHOUT_SNIPPETS[family]
    assert (prompt.prefix, prompt.suffix) == (PREFIX, SUFFIX)
    assert prompt.stop == TEMPLATES[family].stop


@pytest.mark.parametrize("family", sorted(TEMPLATES))
def test_typing_at_the_cursor_keeps_everything_before_it(family: str) -> None:
    """Stable parts first: the next keystroke's prompt starts with this one's up to the
    cursor, so vLLM's prefix cache reuses all of it."""
    template = TEMPLATES[family]
    before = template.render(
        repo_name="demo", snippets=SNIPPETS, file_path="pkg/app.py", prefix=PREFIX, suffix=SUFFIX
    )
    after = template.render(
        repo_name="demo",
        snippets=SNIPPETS,
        file_path="pkg/app.py",
        prefix=PREFIX + "t",
        suffix=SUFFIX,
    )
    cursor = before.index(PREFIX) + len(PREFIX)
    assert after[:cursor] == before[:cursor]
    for path, _ in SNIPPETS:  # snippets in the order given, before the current file
        assert before.index(path) < before.index(PREFIX)
    assert before.index(SNIPPETS[0][0]) < before.index(SNIPPETS[1][0])


ABOVE, TYPED = PREFIX.rsplit("\n", 1)[0] + "\n", "    return "
"""PREFIX cut at its last line's start: the lines above, and the typed part of the line."""

LINE_START = {
    "qwen": f"<|repo_name|>demo\n<|file_sep|>pkg/app.py\n<|fim_prefix|>{ABOVE}"
    f"<|fim_suffix|>{SUFFIX}<|fim_middle|>{TYPED}",
    "starcoder2": f"<repo_name>demo<file_sep><fim_prefix>pkg/app.py\n{ABOVE}"
    f"<fim_suffix>{SUFFIX}<fim_middle>{TYPED}",
    "deepseek": f"{BEGIN}{CURRENT}{ABOVE}{HOLE}{SUFFIX}{END}{TYPED}",
    "codellama": WITHOUT_SNIPPETS["codellama"],  # text after <MID> would get a space
    "codestral": WITHOUT_SNIPPETS["codestral"],  # ends with the typed part either way
}
"""The "lineStart" layout: the typed part of the cursor's line after the middle marker."""


@pytest.mark.parametrize("family", sorted(LINE_START))
def test_golden_line_start_prompt(family: str) -> None:
    prompt = TEMPLATES[family].prompt(
        repo_name="demo", file_path="pkg/app.py", prefix=PREFIX, suffix=SUFFIX, layout="lineStart"
    )
    assert prompt.text == LINE_START[family]
    moved = TEMPLATES[family].line_start
    assert (prompt.prefix, prompt.middle) == ((ABOVE, TYPED) if moved else (PREFIX, ""))
    assert prompt.suffix == SUFFIX


@pytest.mark.parametrize("family", sorted(TEMPLATES))
@pytest.mark.parametrize("typed", ["", "    ", "\t  "])
def test_a_typed_part_of_white_space_stays_in_the_prefix(family: str, typed: str) -> None:
    """Nothing goes after the middle marker: the prompt is the cursor layout's."""
    prefix = ABOVE + typed
    prompts = [
        TEMPLATES[family].prompt(
            repo_name="demo", file_path="pkg/app.py", prefix=prefix, suffix=SUFFIX, layout=layout
        )
        for layout in ("cursor", "lineStart")
    ]
    assert prompts[0] == prompts[1]
    assert (prompts[1].prefix, prompts[1].middle) == (prefix, "")


@pytest.mark.parametrize("family", sorted(TEMPLATES))
def test_keys_typed_on_a_line_share_the_prompt_to_the_middle_marker(family: str) -> None:
    """With "lineStart", the next key's prompt starts with this key's whole prompt (where
    the template moves the typed part): the backend computes only the new characters."""
    template = TEMPLATES[family]
    before, after = (
        template.prompt(
            repo_name="demo",
            snippets=SNIPPETS,
            file_path="pkg/app.py",
            prefix=prefix,
            suffix=SUFFIX,
            layout="lineStart",
        ).text
        for prefix in (PREFIX, PREFIX + "tot")
    )
    shares = template.line_start or family == "codestral"
    assert after.startswith(before) == shares
    if shares:
        assert after[len(before) :] == "tot"


def test_a_line_typed_at_the_files_start_is_all_middle() -> None:
    prompt = TEMPLATES["qwen"].prompt(
        repo_name="demo", file_path="a.py", prefix="import o", suffix="\n", layout="lineStart"
    )
    assert prompt.text.endswith("<|fim_prefix|><|fim_suffix|>\n<|fim_middle|>import o")
    assert (prompt.prefix, prompt.middle) == ("", "import o")


@pytest.mark.parametrize("family", sorted(TEMPLATES))
def test_each_template_has_at_most_four_stop_strings(family: str) -> None:
    template = TEMPLATES[family]
    assert 1 <= len(template.stop) <= 4
    assert template.stop_tokens


def test_template_names_match_the_setting() -> None:
    assert set(get_args(TemplateName)) == {"auto", *TEMPLATES}


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("Qwen/Qwen2.5-Coder-1.5B", "qwen"),
        ("qwen2.5-coder-1.5b-dummy", "qwen"),
        ("/models/deepseek/Qwen2.5-Coder-7B/", "qwen"),  # the folder's own name decides
        ("bigcode/starcoder2-15b", "starcoder2"),
        ("deepseek-ai/deepseek-coder-6.7b-base", "deepseek"),
        ("codellama/CodeLlama-7b-hf", "codellama"),
        ("C:\\models\\CodeLlama-13B", "codellama"),
        ("mistralai/Codestral-22B-v0.1", "codestral"),
        ("gpt-4o", None),
        (None, None),
    ],
)
def test_family_from_the_model_name(model: str | None, family: str | None) -> None:
    assert family_for_model(model) == family


def test_auto_choice_and_explicit_setting(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="server.completion.prompt")
    assert choose_template("auto", "bigcode/starcoder2-3b").family == "starcoder2"
    assert choose_template("codestral", "Qwen/Qwen2.5-Coder-1.5B").family == "codestral"
    assert not caplog.records
    unknown = f"mystery-model-{os.getpid()}"
    assert choose_template("auto", unknown).family == "qwen"
    assert choose_template("auto", unknown) is choose_template("auto", unknown)  # cached
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 1 and unknown in logged[0]
    with pytest.raises(ValueError, match="unknown prompt template"):
        choose_template("gpt", None)


def test_stop_ids_come_from_the_loaded_tokenizer() -> None:
    tokenizer = tiny_tokenizer()
    counter = TokenCounter(tokenizer, source="tiny")
    template = choose_template("starcoder2", None, counter)
    expected = tuple(tokenizer.token_to_id(token) for token in TEMPLATES["starcoder2"].stop_tokens)
    assert template.stop_token_ids == expected
    assert template.prompt(repo_name="r", file_path="a", prefix="", suffix="").stop_token_ids == (
        expected
    )
    # No tokenizer: the known defaults (Qwen's), or none.
    assert choose_template("qwen", None).stop_token_ids == TEMPLATES["qwen"].stop_token_ids
    assert choose_template("starcoder2", None, TokenCounter()).stop_token_ids == ()
    # Only the tokens the tokenizer knows; none known leaves the defaults alone.
    assert choose_template("qwen", None, counter).stop_token_ids == (
        tokenizer.token_to_id("<|endoftext|>"),
    )
    assert choose_template("codestral", None, counter).stop_token_ids == ()


def test_qwen_stop_ids_match_the_real_tokenizer() -> None:
    path = real_qwen_tokenizer_file()
    counter = TokenCounter(Tokenizer.from_file(str(path)), source=str(path))
    derived = TEMPLATES["qwen"].with_tokenizer(counter).stop_token_ids
    assert derived == TEMPLATES["qwen"].stop_token_ids
    # Every stop string and sentinel is one special token, as the template assumes.
    assert counter.tokenizer is not None
    for token in ("<|repo_name|>", "<|file_sep|>", "<|fim_prefix|>", "<|fim_suffix|>"):
        assert len(counter.tokenizer.encode(token).ids) == 1


@pytest.mark.parametrize(
    ("path", "comment"),
    [
        ("pkg/a.py", "# pkg/a.py\n"),
        ("src/a.ts", "// src/a.ts\n"),
        ("lib/x.LUA", "-- lib/x.LUA\n"),
        ("Makefile", "# Makefile\n"),
        ("v1.2/README", "# v1.2/README\n"),
    ],
)
def test_path_comments_use_the_languages_line_comment(path: str, comment: str) -> None:
    assert path_comment(path) == comment


@pytest.mark.parametrize("family", sorted(TEMPLATES))
def test_special_tokens_in_code_cannot_steer_the_prompt(family: str) -> None:
    """A file that contains a family's control strings (tokenizer code, prompt builders)
    gets them broken, so only the template's own markers are control tokens."""
    template = TEMPLATES[family]
    hostile = " ".join(token.lstrip("▁") for token in (*template.stop_tokens, *template.stop))
    clean = template.render(repo_name="r", file_path="a.py", prefix="x = 1\n", suffix="\n")
    dirty = template.render(
        repo_name="r",
        snippets=[("b.py", f"S = '{hostile}'\n")],
        file_path="a.py",
        prefix=f"x = '{hostile}'\n",
        suffix=f"\ny = '{hostile}'\n",
    )
    for token in {token.lstrip("▁") for token in (*template.stop_tokens, *template.stop)}:
        # the template's own markers may add occurrences, the code adds none
        own = template.render(
            repo_name="r", snippets=[("b.py", "S = ''\n")], file_path="a.py", prefix="", suffix=""
        )
        assert dirty.count(token) == own.count(token), token
    assert clean.count("\u200b") == 0
    assert template.snippet("b.py", hostile).count("\u200b") >= 1


def test_the_context_leaves_the_answer_room_in_the_models_window() -> None:
    window = ModelInfo("m", "vllm", 4096)

    assert context_that_fits(4096, 128, window) == 4096 - 128 - WINDOW_SLACK
    assert context_that_fits(2048, 128, window) == 2048
    assert context_that_fits(4096, 128, ModelInfo("m", "vllm", None)) == 4096
    assert context_that_fits(4096, 5000, window) == 64  # still a prompt; vLLM says why not
