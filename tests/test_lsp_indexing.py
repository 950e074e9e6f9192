"""The server indexes the workspace at start-up and shows it as work-done progress."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lsp_helpers import logs
from lsprotocol import types
from pytest_lsp import LanguageClient


async def wait_for_progress_end(client: LanguageClient, timeout: float = 20) -> list[object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for reports in client.progress_reports.values():
            if reports and isinstance(reports[-1], types.WorkDoneProgressEnd):
                return list(reports)
        await asyncio.sleep(0.05)
    raise AssertionError(f"no finished progress; got {client.progress_reports}")


async def test_indexing_reports_progress_and_a_summary(
    vscode: LanguageClient, workspace: Path
) -> None:
    reports = await wait_for_progress_end(vscode)

    begin, end = reports[0], reports[-1]
    assert isinstance(begin, types.WorkDoneProgressBegin)
    assert begin.title == "Headstart: indexing"
    assert isinstance(end, types.WorkDoneProgressEnd)
    assert end.message == "7 files indexed"  # the sample project: 6 Python files + README
    assert any(isinstance(r, types.WorkDoneProgressReport) for r in reports)
    await asyncio.sleep(0.1)
    assert f"indexed {workspace}: 7 files, 9 import edges" in logs(vscode)
