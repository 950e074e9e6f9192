"""The workspace changing under the server: a file rewritten on disk while a completion is
in flight, and the workspace folder renamed while documents are open. The server keeps
serving, the editor's buffers stay what the editor sent, and the index follows the disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, send_inline, suggestion, wait_for_log
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_lsp_cancel import reply_of, texts

DEPOT = '''

class Depot:
    """A second kind of store, added while the user typed."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
'''


def disk_changed(client: LanguageClient, *changes: tuple[Path, types.FileChangeType]) -> None:
    """What an editor's file watcher reports."""
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=path.as_uri(), type=kind) for path, kind in changes]
        )
    )


async def test_a_file_rewritten_on_disk_during_a_completion(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=10)
    fake.script(
        [
            {"match": "w = Warehouse(", "text": '"Annex")\n', "first_delay_ms": 500},
            {"match": "d = Depot(", "text": "capacity=3)\n"},
        ]
    )
    annex = workspace / "annex.py"
    text, position = cursor_at("from inventory.models import Warehouse\n\nw = Warehouse(█\n")
    uri = open_document(fresh, annex, text)
    reply = send_inline(fresh, uri, position, "in-flight")
    await fake.wait_for_async(lambda events: len(events) == 1)

    models = workspace / "inventory" / "models.py"
    models.write_text(models.read_text() + DEPOT)
    annex.write_text("# what is on disk is not what the editor holds\n")
    disk_changed(
        fresh, (models, types.FileChangeType.Changed), (annex, types.FileChangeType.Changed)
    )

    assert texts(await reply_of(reply)) == ['"Annex")']
    text, position = cursor_at("from inventory.models import Depot\n\nd = Depot(█\n")
    fresh.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    for _ in range(50):  # the index takes the rewritten file in the background
        if (
            await suggestion(fresh, uri, position) == "capacity=3)"
            and "class Depot" in (fake.events()[-1]["prompt"])
        ):
            break
        await asyncio.sleep(0.1)
    prompt = fake.events()[-1]["prompt"]
    assert "class Depot" in prompt  # the index followed the disk
    assert "d = Depot(" in prompt and "what is on disk" not in prompt  # the buffer won
    assert "Traceback" not in logs(fresh)


async def test_the_workspace_folder_renamed_while_documents_are_open(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=10)
    fake.script([{"match": "w = Warehouse(", "text": '"Annex")\n'}], default_text="1\n")
    text, position = cursor_at("from inventory.models import Warehouse\n\nw = Warehouse(█\n")
    uri = open_document(fresh, workspace / "annex.py", text)
    assert await suggestion(fresh, uri, position) == '"Annex")'

    moved = workspace.rename(workspace.with_name("renamed_project"))
    disk_changed(fresh, *((path, types.FileChangeType.Deleted) for path in workspace.rglob("*")))
    disk_changed(fresh, (workspace / "inventory" / "models.py", types.FileChangeType.Deleted))

    other, here = cursor_at("total = █\n")
    other_uri = open_document(fresh, workspace / "other.py", other)
    assert await suggestion(fresh, other_uri, here) == "1"  # the open buffers still complete
    text, position = cursor_at("from inventory.models import Warehouse\n\nv = Warehouse(█\n")
    fresh.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    fake.script([{"match": "v = Warehouse(", "text": '"Depot")\n'}])
    assert await suggestion(fresh, uri, position) == '"Depot")'  # edits still apply
    assert "Traceback" not in logs(fresh)
    said = await wait_for_log(fresh, "is gone from the disk")
    assert said.count("is gone from the disk") == 1  # once, for all the files' events
    assert moved.is_dir()
