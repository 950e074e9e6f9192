"""The project cache follows the editor: buffers, saves, and files changed on disk.

The server says what it updated in its debug log; these tests read that log, as a user
reading the editor's output would.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import lsp_helpers
import pytest_lsp
from conftest import CONFIG, fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import logs, open_document
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_lsp_indexing import wait_for_progress_end

MODELS = "inventory/models.py"
PRICING = "inventory/pricing.py"


@pytest_lsp.fixture(config=CONFIG)
async def editor(
    lsp_client: LanguageClient, fake: FakeBackend, workspace: Path
) -> AsyncIterator[None]:
    """VS Code with debug logging."""
    options = fast_settings(fake.url) | {"log": {"level": "debug"}}
    await start_session(lsp_client, "vscode", workspace, options)
    await wait_for_progress_end(lsp_client)
    yield
    await lsp_client.shutdown_session()


wait_for_log = functools.partial(lsp_helpers.wait_for_log, timeout=10.0)
"""Updates wait for the buffer debounce and, at first, the end of indexing."""


def edit(client: LanguageClient, uri: str, version: int, text: str) -> None:
    """Replace the whole buffer, as an editor with full sync would."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def watched(client: LanguageClient, *changes: tuple[Path, types.FileChangeType]) -> None:
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=path.as_uri(), type=kind) for path, kind in changes]
        )
    )


async def test_file_watching_is_registered_with_the_editor(editor: LanguageClient) -> None:
    registrations = editor.registrations  # type: ignore[attr-defined]
    methods = [r.method for r in registrations]
    assert methods == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]


async def test_an_unsaved_buffer_wins_until_it_is_closed(
    editor: LanguageClient, workspace: Path
) -> None:
    path = workspace / PRICING
    on_disk = path.read_text()
    assert "inventory.stock" not in on_disk
    uri = open_document(editor, path)
    edited = "from inventory.stock import Warehouse\n" + on_disk
    edit(editor, uri, 2, edited)

    await wait_for_log(editor, f"cache: {PRICING} updated from the unsaved buffer")
    line = next(ln for ln in logs(editor).splitlines() if "unsaved buffer" in ln)
    assert "inventory/stock.py" in line
    assert path.read_text() == on_disk

    editor.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for_log(editor, f"cache: {PRICING} updated from the disk")
    line = [ln for ln in logs(editor).splitlines() if "updated from the disk" in ln][-1]
    assert "inventory/stock.py" not in line


async def test_an_open_document_is_outlined_from_its_kept_tree(
    editor: LanguageClient, workspace: Path
) -> None:
    """The refresh after a pause in typing runs on the event loop, before the next key:
    it outlines the tree the server keeps for the document (re-parsed incrementally),
    not a whole new parse of the file."""
    path = workspace / PRICING
    uri = open_document(editor, path)
    edit(editor, uri, 2, "from inventory.stock import Warehouse\n" + path.read_text())

    await wait_for_log(editor, f"cache: {PRICING} updated from the unsaved buffer")
    line = next(ln for ln in logs(editor).splitlines() if "unsaved buffer" in ln)
    assert "outlined from the open document's tree" in line
    assert "inventory/stock.py" in line


async def test_typing_is_debounced(editor: LanguageClient, workspace: Path) -> None:
    path = workspace / PRICING
    text = path.read_text()
    uri = open_document(editor, path)
    for version, extra in enumerate(["import inventory.stoc", "import inventory.stock"], 2):
        edit(editor, uri, version, extra + "\n" + text)
    await wait_for_log(editor, f"cache: {PRICING} updated from the unsaved buffer")
    await asyncio.sleep(0.5)
    updates = [ln for ln in logs(editor).splitlines() if "unsaved buffer" in ln]
    assert len(updates) == 1, updates


async def test_a_save_is_read_from_the_disk(editor: LanguageClient, workspace: Path) -> None:
    path = workspace / PRICING
    uri = open_document(editor, path)
    saved = "from inventory.report import format_table\n" + path.read_text()
    edit(editor, uri, 2, saved)
    path.write_text(saved)
    editor.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for_log(editor, f"cache: {PRICING} updated from the disk")
    line = [ln for ln in logs(editor).splitlines() if "updated from the disk" in ln][-1]
    assert "inventory/report.py" in line


async def test_new_renamed_and_deleted_files_on_disk(
    editor: LanguageClient, workspace: Path
) -> None:
    created = workspace / "inventory" / "audit.py"
    created.write_text(
        "from inventory.models import Item\n\n\ndef audit(item: Item) -> None: ...\n"
    )
    watched(editor, (created, types.FileChangeType.Created))
    await wait_for_log(
        editor, "cache: inventory/audit.py updated from the disk; imports: inventory/models.py"
    )

    renamed = workspace / "inventory" / "checks.py"
    created.rename(renamed)
    watched(
        editor,
        (created, types.FileChangeType.Deleted),
        (renamed, types.FileChangeType.Created),
    )
    await wait_for_log(editor, "cache: inventory/audit.py removed")
    await wait_for_log(editor, "cache: inventory/checks.py updated from the disk")

    renamed.unlink()
    watched(editor, (renamed, types.FileChangeType.Deleted))
    await wait_for_log(editor, "cache: inventory/checks.py removed")


async def test_a_deleted_folder_removes_its_files(editor: LanguageClient, workspace: Path) -> None:
    folder = workspace / "inventory"
    for path in list(folder.iterdir()):
        path.unlink()
    folder.rmdir()
    watched(editor, (folder, types.FileChangeType.Deleted))
    await wait_for_log(editor, f"cache: {MODELS} removed")
    await wait_for_log(editor, f"cache: {PRICING} removed")


async def test_files_the_scan_rules_exclude_stay_out(
    editor: LanguageClient, workspace: Path
) -> None:
    (workspace / ".gitignore").write_text("scratch.py\n")
    scratch = workspace / "scratch.py"
    scratch.write_text("import inventory.models\n")
    binary = workspace / "blob.py"
    binary.write_bytes(b"\x00\x01" * 100)
    watched(
        editor,
        (scratch, types.FileChangeType.Created),
        (binary, types.FileChangeType.Created),
    )
    uri = open_document(editor, workspace / PRICING)  # a later event, to wait for
    edit(editor, uri, 2, "import inventory.stock\n")
    await wait_for_log(editor, f"cache: {PRICING} updated from the unsaved buffer")
    assert "scratch.py" not in logs(editor)
    assert "blob.py" not in logs(editor)
