"""`completion.promptLayout` auto, the default, through the real server over LSP: the
lineStart layout with token healing where the backend can heal (a vLLM that takes the
healing grammar, the served model's tokenizer here), the cursor layout elsewhere, and
from the moment a backend shows it does not honour healing (docs/results.md, "Where the
hole starts": lineStart unhealed, or healed by a regex alone, scores far below cursor)."""

from __future__ import annotations

import dataclasses
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

from server.completion.request import DEFAULT_PROMPTING, resolved_layout
from server.config import CompletionSettings

TYPED_SUM = "def total(items):\n    return sum█\n"
CURSOR_END = "    return sum<fim_suffix>\n<fim_middle>"
"""How a StarCoder2 prompt laid out at the cursor ends: the typed part before the suffix."""
LINE_START_END = "<fim_suffix>\n<fim_middle>    return sum"


def sent_prompt(event: dict[str, Any], served: Path) -> str:
    """The prompt the backend got, as text (it goes as the served tokenizer's ids)."""
    prompt = event["body"]["prompt"]
    if isinstance(prompt, str):
        return prompt
    return Tokenizer.from_file(str(served)).decode(prompt, skip_special_tokens=False)


@pytest.mark.parametrize(
    ("layout", "healing", "auto_heals", "resolved"),
    [
        ("auto", False, True, ("lineStart", True)),
        ("auto", True, False, ("cursor", False)),
        ("cursor", True, True, ("cursor", True)),
        ("lineStart", False, True, ("lineStart", False)),
        ("lineStart", True, False, ("lineStart", True)),
    ],
)
def test_only_auto_is_resolved_and_by_what_the_model_can_heal(
    layout: str, healing: bool, auto_heals: bool, resolved: tuple[str, bool]
) -> None:
    settings = CompletionSettings.model_validate({"promptLayout": layout, "tokenHealing": healing})
    prompting = dataclasses.replace(DEFAULT_PROMPTING, auto_heals=auto_heals)

    after = resolved_layout(settings, prompting)

    assert (after.prompt_layout, after.token_healing) == resolved
    assert CompletionSettings.model_validate({}).prompt_layout == "auto"


async def test_by_default_a_backend_that_can_heal_gets_line_start_healed_prompts(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    """No promptLayout set, a vLLM with the served model's tokenizer here: the typed part
    goes after the middle marker, its last token backed off and forced by the grammar,
    and the editor is shown what follows the typed characters."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    fake.script([], default_text="(items)\n", tokenizer=served)
    settings = fast_settings(fake.url, template="starcoder2", tokenizer=str(served))
    shown, event = await first_completion(fresh, fake, workspace, settings, TYPED_SUM)

    assert shown == "(items)"
    removed = forced_start(event["body"])
    assert removed and "    return sum".endswith(removed)
    assert (sent_prompt(event, served) + removed).endswith(LINE_START_END)
    assert "grammar" in event["body"]["structured_outputs"]
    assert "token healing: on for " in logs(fresh)
    assert "promptLayout auto lays prompts out lineStart" in logs(fresh)


async def test_by_default_a_backend_that_cannot_heal_gets_the_cursor_layout(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """No tokenizer of the served model here: the prompt ends at the cursor, unhealed,
    as before auto, and the log says why."""
    fake.script([], default_text="(items)\n")
    settings = fast_settings(fake.url, template="starcoder2")
    shown, event = await first_completion(fresh, fake, workspace, settings, TYPED_SUM)

    assert shown == "(items)"
    assert event["body"]["prompt"].endswith(CURSOR_END)
    assert "structured_outputs" not in event["body"]
    assert "promptLayout auto lays prompts out at the cursor: no tokenizer" in logs(fresh)


async def test_sglang_keeps_the_cursor_layout_by_default(
    fresh: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    """SGLang takes healing's constraint as a regex only, under which healed answers cannot
    end at the template's end token: auto does not heal there."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    with FakeBackend(extra_args=["--flavor", "sglang"]) as engine:
        engine.script([], default_text="(items)\n", tokenizer=served)
        settings = fast_settings(engine.url, template="starcoder2", tokenizer=str(served))
        shown, event = await first_completion(fresh, engine, workspace, settings, TYPED_SUM)

    assert shown == "(items)"
    assert sent_prompt(event, served).endswith(CURSOR_END)
    assert "regex" not in event["body"]
    assert "takes healing's constraint as a regex only" in logs(fresh)


async def two_completions(
    client: LanguageClient, workspace: Path, settings: dict[str, object]
) -> tuple[str, str]:
    """The suggestions for the same text in two documents, one after the other."""
    await start_session(client, "vscode", workspace, settings)
    text, position = cursor_at(TYPED_SUM)
    first = await suggestion(client, open_document(client, workspace / "a.py", text), position)
    second = await suggestion(client, open_document(client, workspace / "b.py", text), position)
    return first, second


@pytest.mark.parametrize("failure", ["refuses the grammar", "ignores the constraint"])
async def test_auto_goes_back_to_the_cursor_layout_once_the_backend_does_not_heal(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path, failure: str
) -> None:
    """A vLLM whose xgrammar backend refuses the grammar (the request goes again with the
    regex), or a server that ignores the constraint (its answer is dropped): every later
    request is laid out at the cursor, and the log says so once."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    refuses = failure == "refuses the grammar"
    fake.script(
        [],
        default_text="(items)\n",
        tokenizer=served,
        refuse_fields=["structured_outputs.grammar"] if refuses else [],
        ignore_constraints=not refuses,
    )
    settings = fast_settings(fake.url, template="starcoder2", tokenizer=str(served))
    first, second = await two_completions(fresh, workspace, settings)

    *healed, later = fake.events()
    assert forced_start(healed[-1]["body"])  # the first request was healed
    assert first == ("(items)" if refuses else "")
    assert second == "(items)"
    assert sent_prompt(later, served).endswith(CURSOR_END)
    assert "structured_outputs" not in later["body"]
    assert logs(fresh).count("token healing: off from now on") == 1


async def test_explicit_line_start_healing_keeps_the_regex_after_a_refusal(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    """promptLayout lineStart with tokenHealing is kept as it was: after the grammar is
    refused, later requests are still healed, by the regex."""
    served = save_tiny_tokenizer(tmp_path / "served-model")
    fake.script(
        [],
        default_text="(items)\n",
        tokenizer=served,
        refuse_fields=["structured_outputs.grammar"],
    )
    settings = fast_settings(
        fake.url,
        template="starcoder2",
        tokenizer=str(served),
        promptLayout="lineStart",
        tokenHealing=True,
    )
    first, second = await two_completions(fresh, workspace, settings)

    later = fake.events()[-1]
    assert first == second == "(items)"
    assert set(later["body"]["structured_outputs"]) == {"regex"}
    assert (sent_prompt(later, served) + forced_start(later["body"])).endswith(LINE_START_END)
    assert "token healing: off from now on" not in logs(fresh)
