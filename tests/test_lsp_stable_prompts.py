"""Prompts that stay the same while the user stays in a document, so the backend's prefix
cache keeps them (issue 37, "Stable prompts"): the snippets of other files are kept over
the stay until the cursor's statement needs a definition they lack
(`completion.keepSnippets`), the current file's window starts at a multiple of
`completion.windowStepLines` lines and, with `completion.windowKeepTokens`, keeps its
start over moves a few lines apart, and the text after the cursor is not cut anew while
keys are typed on one line. Over LSP, against the fake model, reading the prompts it got."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import open_document
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_lsp_context import prompt_for
from test_lsp_indexing import wait_for_progress_end
from test_lsp_sync import edit

DESK = """from inventory.models import Warehouse
from inventory.pricing import apply_discount, total_value, with_vat
from inventory.stock import receive, ship


def restock(warehouse: Warehouse, item) -> None:
    received = receive(warehouse, item, 3)
    discounted = apply_discount(received, 10.0)

    print(discounted)


def price(warehouse: Warehouse) -> float:
    amount = with_vat(total_value(warehouse))

    return amount


def send(warehouse: Warehouse) -> None:
    shipped = ship(
"""
DISCOUNTED = "    discounted = apply_discount(received, 10.0)"
AMOUNT = "    amount = with_vat(total_value(warehouse))"
TIGHT = {"contextTokens": 640, "crossFileShare": 0.3, "similarCodeShare": 0.0}
"""A budget that holds a few snippets only, so which ones the cursor gets matters."""


def at(text: str, line_text: str, column: int | None = None, below: int = 0) -> types.Position:
    """The position at `column` (default: the end) of the line that is `line_text`, or of
    the line `below` lines under it."""
    lines = text.split("\n")
    line = lines.index(line_text) + below
    return types.Position(line=line, character=len(lines[line]) if column is None else column)


def snippets_part(prompt: str) -> str:
    """The prompt up to the current file's block: the repository header and the snippets,
    in their order."""
    return prompt[: prompt.rindex("<|file_sep|>")]


def hole(prompt: str) -> tuple[str, str]:
    """(the current file's text in the prefix slot, the suffix slot) of a Qwen prompt."""
    prefix_start, suffix_start = prompt.index("<|fim_prefix|>"), prompt.index("<|fim_suffix|>")
    prefix = prompt[prefix_start + len("<|fim_prefix|>") : suffix_start]
    suffix = prompt[suffix_start + len("<|fim_suffix|>") : prompt.index("<|fim_middle|>")]
    return prefix, suffix


async def start(
    client: LanguageClient, fake: FakeBackend, workspace: Path, **settings: object
) -> None:
    await start_session(client, "vscode", workspace, fast_settings(fake.url, **settings))
    await wait_for_progress_end(client)


async def typed_prompts(
    client: LanguageClient,
    fake: FakeBackend,
    uri: str,
    text: str,
    position: types.Position,
    keys: str,
) -> list[str]:
    """The prompts of the keystrokes that type `keys` one by one at `position` of `text`
    (the document at version 1), the first key's included."""
    lines = text.split("\n")
    line = lines[position.line]
    prompts = []
    for n in range(1, len(keys) + 1):
        lines[position.line] = line[: position.character] + keys[:n] + line[position.character :]
        edit(client, uri, n + 1, "\n".join(lines))
        moved = types.Position(line=position.line, character=position.character + n)
        prompts.append(await prompt_for(client, fake, uri, moved))
    return prompts


async def test_snippets_stay_over_a_stay_until_the_cursor_needs_other_definitions(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start(fresh, fake, workspace, **TIGHT)
    path = workspace / "inventory" / "desk.py"
    path.write_text(DESK)
    uri = open_document(fresh, path, DESK)

    in_restock = await prompt_for(fresh, fake, uri, at(DESK, DISCOUNTED))
    blank = at(DESK, DISCOUNTED, below=1)  # the empty line under it
    keys = await typed_prompts(fresh, fake, uri, DESK, blank, "    cou")
    in_price = await prompt_for(fresh, fake, uri, at(DESK, AMOUNT, 0, below=1))

    kept = snippets_part(in_restock)
    assert "<|file_sep|>" in kept and "def ship(" not in kept
    assert [snippets_part(prompt) for prompt in keys] == [kept] * len(keys)
    assert snippets_part(in_price) == kept  # names only above it: the set stays

    in_send = await prompt_for(fresh, fake, uri, at(DESK, "    shipped = ship("))
    assert "def ship(" in snippets_part(in_send)  # the call being typed needs it


async def test_without_kept_snippets_the_set_follows_the_lines_above(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """The control: the same moves with `completion.keepSnippets` off change the snippets
    (what the kept set saves the backend)."""
    await start(fresh, fake, workspace, keepSnippets=False, **TIGHT)
    path = workspace / "inventory" / "desk.py"
    path.write_text(DESK)
    uri = open_document(fresh, path, DESK)

    in_restock = await prompt_for(fresh, fake, uri, at(DESK, DISCOUNTED))
    in_price = await prompt_for(fresh, fake, uri, at(DESK, AMOUNT, 0, below=1))

    assert snippets_part(in_price) != snippets_part(in_restock)


LONG = "".join(f"total_{i} = {i} * 3 + len(str({i}))\n" for i in range(400)) + "\n"


@pytest.mark.parametrize(("step", "keys"), [(8, "grand"), (32, "grand_total = ")])
async def test_the_window_starts_at_a_step_and_stays_there_while_typing(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, step: int, keys: str
) -> None:
    """The prefix is cut far above the cursor; its first line, a multiple of the step,
    stays while keys are typed (at 8 lines the longer word's 14 keys move it once here:
    the longest tail that fits moves a step down as soon as it no longer fits)."""
    await start(fresh, fake, workspace, contextTokens=1024, windowStepLines=step)
    path = workspace / "inventory" / "long_desk.py"
    uri = open_document(fresh, path, LONG)
    end = types.Position(line=400, character=0)

    prompts = await typed_prompts(fresh, fake, uri, LONG, end, keys)

    firsts = {hole(prompt)[0].split("\n", 1)[0] for prompt in prompts}
    assert len(firsts) == 1, firsts
    (first,) = firsts
    assert first.startswith("total_") and first != "total_0 = 0 * 3 + len(str(0))"
    assert int(first.split(" ", 1)[0].removeprefix("total_")) % step == 0


@pytest.mark.parametrize("keep", [0, 192])
async def test_the_window_keeps_its_start_over_moves_a_few_lines_apart(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, keep: int
) -> None:
    """With `windowKeepTokens`, the first move down past a full window moves its start
    once, with room to spare, and the moves after it, up and down a few lines, keep that
    start; without, the start follows the cursor a step at a time."""
    await start(fresh, fake, workspace, contextTokens=1024, windowKeepTokens=keep)
    path = workspace / "inventory" / "long_desk.py"
    uri = open_document(fresh, path, LONG)

    prompts = [
        await prompt_for(fresh, fake, uri, types.Position(line=line, character=0))
        for line in (200, 209, 212, 217, 214, 210)
    ]

    firsts = [hole(prompt)[0].split("\n", 1)[0] for prompt in prompts]
    if keep:
        assert firsts[1] != firsts[0] and len(set(firsts[1:])) == 1, firsts
        assert len({snippets_part(prompt) for prompt in prompts[1:]}) == 1
    else:
        assert len(set(firsts)) > 2, firsts


@pytest.mark.parametrize("layout", ["cursor", "lineStart"])
async def test_the_suffix_stays_the_same_while_typing_along_a_line(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path, layout: str
) -> None:
    await start(fresh, fake, workspace, promptLayout=layout)
    path = workspace / "inventory" / "desk.py"
    path.write_text(DESK)
    uri = open_document(fresh, path, DESK)

    here = at(DESK, "    return amount", 4)
    prompts = await typed_prompts(fresh, fake, uri, DESK, here, "amount = ro")

    suffixes = {hole(prompt)[1] for prompt in prompts}
    assert len(suffixes) == 1, suffixes
    (suffix,) = suffixes
    assert "return amount" in suffix and "def send(" in suffix
