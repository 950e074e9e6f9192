"""The project cache's folder deleted, or made read-only, while the server runs: it keeps
serving completions with cross-file context, loses no document state, and says what
happened in the log."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from conftest import (
    SERVER_COMMAND,
    end_session,
    fast_settings,
    guarded_config,
    server_env,
    start_session,
)
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, partial_change, suggestion, wait_for_log
from lsprotocol import types
from pytest_lsp import LanguageClient

CACHE = Path(tempfile.mkdtemp(prefix="headstart-cache-faults-"))
"""This file's own cache folder (the environment's wins over the cacheDir setting)."""


@pytest_lsp.fixture(
    config=guarded_config(SERVER_COMMAND, server_env(HEADSTART_CACHE_DIR=str(CACHE)))
)
async def own_cache(lsp_client: LanguageClient) -> AsyncIterator[None]:
    yield
    await end_session(lsp_client)


@pytest.mark.parametrize("fault", ["deleted", "read_only"])
async def test_the_cache_folder_lost_while_running_leaves_completion_working(
    own_cache: LanguageClient, fake: FakeBackend, workspace: Path, fault: str
) -> None:
    fresh, cache = own_cache, CACHE
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=10)
    assert any(cache.iterdir())
    if fault == "deleted":
        shutil.rmtree(cache)
    else:
        for folder, _, _ in os.walk(cache):
            os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    try:
        fake.script([{"match": "Warehouse(", "text": '"Annex")\n'}])
        # a new file on disk and an edited one: both go to the (broken) store
        (workspace / "inventory" / "extra.py").write_text("def extra() -> int:\n    return 1\n")
        fresh.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(
                        uri=(workspace / "inventory" / "extra.py").as_uri(),
                        type=types.FileChangeType.Created,
                    )
                ]
            )
        )
        text, position = cursor_at("from inventory.models import Warehouse\n\nw = Warehouse(█\n")
        uri = open_document(fresh, workspace / "annex.py", text)
        fresh.text_document_did_change(partial_change(uri, 2, position, position, ""))

        assert await suggestion(fresh, uri, position) == '"Annex")'
        prompt = fake.events()[-1]["prompt"]
        assert "class Warehouse" in prompt  # cross-file context still there
        assert "Traceback" not in logs(fresh)
        if fault == "deleted":  # rebuilt where it was, and said so once
            said = await wait_for_log(fresh, "Discarding the project cache")
            assert said.count("Discarding the project cache") == 1
            assert "nothing is cached" not in said
            assert any((cache / "projects").iterdir())
    finally:
        for folder, _, _ in os.walk(cache):
            os.chmod(folder, stat.S_IRWXU)


async def test_what_the_server_writes_is_readable_by_the_user_alone(
    own_cache: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    log_file, trace = tmp_path / "server.log", tmp_path / "requests.jsonl"
    settings = fast_settings(fake.url)
    settings["log"] = {"file": str(log_file), "requestTrace": str(trace)}
    await start_session(own_cache, "vscode", workspace, settings)
    await wait_for_log(own_cache, "indexed ", timeout=10)
    text, position = cursor_at("x = █\n")
    uri = open_document(own_cache, workspace / "private.py", text)
    await suggestion(own_cache, uri, position)

    written = [log_file, trace, *(CACHE / "projects").rglob("*")]
    assert len(written) > 3
    for path in written:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"
