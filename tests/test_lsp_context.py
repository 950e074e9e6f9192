"""The prompt the model sees carries the definitions the cursor needs, from other files,
and follows the editor's unsaved buffers and the files changed on disk."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, open_document, suggestion
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_lsp_indexing import wait_for_progress_end
from test_lsp_sync import edit, watched

NEW_REPORT = """from inventory.models import Warehouse
from inventory.stock import ship


def ship_all(warehouse: Warehouse) -> None:
    for sku in list(warehouse.items):
        shipped = ship(█
"""


def prompt_files(prompt: str) -> list[str]:
    """The paths of the files (snippets, then the current file) a repo-level prompt shows."""
    return [part.split("\n", 1)[0] for part in prompt.split("<|file_sep|>")[1:]]


async def prompt_for(
    client: LanguageClient, fake: FakeBackend, uri: str, position: types.Position
) -> str:
    fake.reset()
    await suggestion(client, uri, position)
    return str(fake.events()[-1]["prompt"])


async def prompt_showing(
    client: LanguageClient, fake: FakeBackend, uri: str, position: types.Position, text: str
) -> str:
    """The first prompt for the cursor that shows `text`, asked again until it does (the
    server reads a file changed on disk in the background); fails after 10 s."""
    deadline = time.monotonic() + 10
    prompt = ""
    while text not in prompt:
        assert time.monotonic() < deadline, prompt
        prompt = await prompt_for(client, fake, uri, position)
        await asyncio.sleep(0.1)
    return prompt


async def test_the_prompt_holds_the_definitions_the_cursor_calls(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await wait_for_progress_end(vscode)
    text, position = cursor_at(NEW_REPORT)
    path = workspace / "inventory" / "shipping.py"
    path.write_text(text)
    uri = open_document(vscode, path, text)

    prompt = await prompt_for(vscode, fake, uri, position)

    assert "def ship(warehouse: Warehouse, sku: str, quantity: int) -> Item:" in prompt
    assert "class Warehouse" in prompt
    assert prompt_files(prompt)[-1] == "inventory/shipping.py"  # the current file comes last
    assert prompt.index("def ship(") < prompt.index("<|fim_prefix|>")


async def test_consecutive_keystrokes_share_the_prompt_up_to_the_current_file(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await wait_for_progress_end(vscode)
    text, position = cursor_at(NEW_REPORT)
    path = workspace / "inventory" / "shipping.py"
    uri = open_document(vscode, path, text)
    first = await prompt_for(vscode, fake, uri, position)
    typed = "warehouse"
    edit(vscode, uri, 2, text[: len(text) - 1] + typed + "\n")
    moved = types.Position(line=position.line, character=position.character + len(typed))
    second = await prompt_for(vscode, fake, uri, moved)

    header_end = first.index("<|fim_prefix|>")
    assert second[:header_end] == first[:header_end]
    assert second.startswith(first[: first.index("<|fim_suffix|>")])


async def test_a_long_file_keeps_its_imports_in_the_prompt(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """Its prefix is cut far below the import lines; they come back just before it."""
    await wait_for_progress_end(vscode)
    body = "".join(f"total_{i} = {i} * 3 + len(str({i}))\n" for i in range(1500))
    text, position = cursor_at(NEW_REPORT.replace("def ship_all", body + "\n\ndef ship_all"))
    path = workspace / "inventory" / "long_report.py"
    uri = open_document(vscode, path, text)

    prompt = await prompt_for(vscode, fake, uri, position)

    current = prompt[prompt.index("<|fim_prefix|>") :]
    assert "total_0 = " not in current and "from inventory.models" not in current
    assert prompt_files(prompt)[-2:] == ["inventory/long_report.py"] * 2
    head = prompt.split("<|file_sep|>")[-2]
    assert head == (
        "inventory/long_report.py\n"
        "from inventory.models import Warehouse\nfrom inventory.stock import ship\n"
    )


async def test_the_suffix_past_its_fim_share_comes_before_the_current_file(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """`completion.fimSuffixTokens`: the lines after the cursor beyond it are shown as a
    chunk of the current file ahead of it, where typing at the cursor leaves them be."""
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url, fimSuffixTokens=12))
    await wait_for_progress_end(fresh)
    later = "".join(f"late_{i} = len(str({i}))\n" for i in range(30))
    text, position = cursor_at(NEW_REPORT + "\n" + later)
    path = workspace / "inventory" / "tail_report.py"
    uri = open_document(fresh, path, text)

    prompt = await prompt_for(fresh, fake, uri, position)

    chunks = prompt.split("<|file_sep|>")[1:-1]
    (tail,) = [chunk for chunk in chunks if chunk.startswith("inventory/tail_report.py\n")]
    assert tail.endswith("late_29 = len(str(29))\n")
    fim_suffix = prompt[prompt.index("<|fim_suffix|>") : prompt.index("<|fim_middle|>")]
    assert "late_29" not in fim_suffix and fim_suffix.count("\n") < 6
    assert prompt_files(prompt)[-1] == "inventory/tail_report.py"


async def test_an_unsaved_import_brings_its_module_into_the_prompt(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await wait_for_progress_end(vscode)
    path = workspace / "inventory" / "pricing.py"
    on_disk = path.read_text()
    uri = open_document(vscode, path)
    text = "from inventory.stock import OutOfStock\n" + on_disk + "\n\ndef check():\n    raise "
    edit(vscode, uri, 2, text)
    end = types.Position(line=text.count("\n"), character=len("    raise "))
    await asyncio.sleep(0.5)  # past the buffer debounce

    prompt = await prompt_for(vscode, fake, uri, end)

    assert "class OutOfStock(Exception):" in prompt
    assert path.read_text() == on_disk


async def test_a_file_created_on_disk_is_offered_at_once(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await wait_for_progress_end(vscode)
    created = workspace / "inventory" / "discounts.py"
    created.write_text(
        'def seasonal_discount(price: float, season: str) -> float:\n    """Cut by season."""\n'
        "    return price * 0.9\n"
    )
    watched(vscode, (created, types.FileChangeType.Created))
    text, position = cursor_at(
        "from inventory.discounts import seasonal_discount\n\nprice = seasonal_discount(█\n"
    )
    path = workspace / "inventory" / "checkout.py"
    uri = open_document(vscode, path, text)
    await prompt_showing(
        vscode, fake, uri, position, "def seasonal_discount(price: float, season: str)"
    )


async def test_without_an_index_the_prompt_is_the_current_file(
    vscode: LanguageClient, fake: FakeBackend, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.py"
    text, position = cursor_at("import os\n\nprint(█\n")
    outside.write_text(text)
    uri = open_document(vscode, outside, text)
    prompt = await prompt_for(vscode, fake, uri, position)
    assert prompt_files(prompt) == ["elsewhere.py"]


LEDGER = (
    '"""Bookkeeping: how the project values stock (long enough to be shown by its outline)."""\n'
    "\n"
    "from inventory.models import Warehouse\n"
    "from inventory.pricing import total_value, with_vat\n"
    "\n\n"
    "def closing_entry(warehouse: Warehouse, period: str) -> dict[str, object]:\n"
    "    net = total_value(warehouse)\n"
    "    gross = with_vat(net)\n"
    '    return dict(period=period, net=net, gross=gross, kind="closing-entry")\n'
    + "".join(
        f"\n\ndef account_{i}(warehouse: Warehouse) -> int:\n    return len(warehouse) + {i}\n"
        for i in range(20)
    )
)

AUDIT = """from inventory.models import Warehouse
from inventory.pricing import total_value, with_vat


def audit_entry(warehouse: Warehouse, period: str) -> dict[str, object]:
    net = total_value(warehouse)
    gross = █
"""


async def test_a_call_site_from_another_file_reaches_the_prompt(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """Similar code: the lines of another file that read like those above the cursor
    show the model how the function being called is called there."""
    await wait_for_progress_end(vscode)
    ledger = workspace / "inventory" / "ledger.py"
    ledger.write_text(LEDGER)
    watched(vscode, (ledger, types.FileChangeType.Created))
    text, position = cursor_at(AUDIT)
    path = workspace / "inventory" / "audit.py"
    uri = open_document(vscode, path, text)
    prompt = await prompt_showing(vscode, fake, uri, position, 'kind="closing-entry"')
    assert "    gross = with_vat(net)\n" in prompt
    assert prompt.index("closing-entry") < prompt.index("<|fim_prefix|>")
    assert prompt_files(prompt)[-1] == "inventory/audit.py"
