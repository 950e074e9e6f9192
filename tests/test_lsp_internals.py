"""`log.statsIntervalS`: the server logs what it holds, as JSON a soak can read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, suggestion, wait_for_log
from pytest_lsp import LanguageClient

from server.lsp.internals import PREFIX


def internals_lines(client: LanguageClient) -> list[dict[str, int]]:
    return [
        json.loads(line.rsplit(PREFIX, 1)[1])
        for line in logs(client).splitlines()
        if PREFIX in line
    ]


async def test_the_server_logs_its_internals_each_interval(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    settings = fast_settings(fake.url)
    settings["log"] = {"statsIntervalS": 1}
    await start_session(fresh, "vscode", workspace, settings)
    await wait_for_log(fresh, "indexed ", timeout=10)
    fake.script([], default_text="1\n")
    for name in ("a", "b"):
        text, position = cursor_at(f"{name} = █\n")
        uri = open_document(fresh, workspace / f"{name}.py", text)
        assert await suggestion(fresh, uri, position) == "1"
    seen = len(internals_lines(fresh))
    for _ in range(40):  # the next line, written after both suggestions
        if len(internals_lines(fresh)) > seen:
            break
        await asyncio.sleep(0.1)
    last = internals_lines(fresh)[-1]
    assert last["documents"] == 2
    assert last["shownSuggestions"] == 2
    assert last["indexedFiles"] == 7  # the sample project
    assert last["tasks"] >= 1 and last["modelJobs"] == 0
    assert 0 <= last["backendConnections"] <= 8  # streams closed early close theirs


async def test_no_internals_lines_by_default(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=10)
    await asyncio.sleep(1.5)
    assert PREFIX not in logs(fresh)
