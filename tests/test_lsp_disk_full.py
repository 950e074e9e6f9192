"""The disk holding the project cache fills up while the server runs (a 2 MB tmpfs, filled
by another writer): completion keeps its cross-file context from the index in memory, the
store is kept (not discarded as damaged), the server says once that the disk is full, and
saves again once there is room."""

from __future__ import annotations

import errno
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
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
from lsp_helpers import cursor_at, logs, open_document, suggestion, wait_for_log
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_lsp_disk_faults import disk_changed

SMALL_DISK = Path(tempfile.mkdtemp(prefix="headstart-small-disk-"))
"""A tmpfs of `SIZE` is mounted here; the server's cache folder is on it."""
SIZE = "2m"
FULL = "The disk holding the project cache"


@pytest.fixture(scope="module")
def small_disk() -> Iterator[Path]:
    """Mounted before the server of `on_small_disk` starts (module scope goes first)."""
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(SMALL_DISK)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a {SIZE} tmpfs here: {mounted.stderr.strip()}")
    try:
        yield SMALL_DISK
    finally:
        subprocess.run(["umount", "--lazy", str(SMALL_DISK)], check=False)


@pytest_lsp.fixture(
    config=guarded_config(SERVER_COMMAND, server_env(HEADSTART_CACHE_DIR=str(SMALL_DISK / "cache")))
)
async def on_small_disk(lsp_client: LanguageClient) -> AsyncIterator[None]:
    yield
    await end_session(lsp_client)


def fill(disk: Path) -> Path:
    """Write zeros until the disk says it is full; the filler's path."""
    filler = disk / "filler"
    chunk = bytes(64 * 1024)
    with filler.open("wb") as out:
        try:
            while True:
                out.write(chunk)
                out.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    return filler


def depot_module(name: str) -> str:
    """A module large enough that its records need new pages in the store."""
    methods = "".join(
        f"\n    def move_{i}(self, count: int) -> int:\n        return self.capacity - count\n"
        for i in range(200)
    )
    return (
        f"class {name}:\n    def __init__(self, capacity: int) -> None:\n"
        f"        self.capacity = capacity\n{methods}"
    )


def added(client: LanguageClient, path: Path, text: str) -> None:
    path.write_text(text)
    disk_changed(client, (path, types.FileChangeType.Created))


async def test_a_full_disk_keeps_the_store_and_completion_working(
    small_disk: Path, on_small_disk: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    client = on_small_disk
    await start_session(client, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(client, "indexed ", timeout=10)
    stores = list((small_disk / "cache" / "projects").iterdir())
    assert len(stores) == 1
    store = stores[0]
    filler = fill(small_disk)
    try:
        for name in ("Depot", "Annex"):
            added(client, workspace / "inventory" / f"{name.lower()}.py", depot_module(name))
        said = await wait_for_log(client, FULL, timeout=10)

        fake.script([{"match": "d = Depot(", "text": "capacity=3)\n"}])
        text, position = cursor_at("from inventory.depot import Depot\n\nd = Depot(█\n")
        uri = open_document(client, workspace / "yard.py", text)
        assert await suggestion(client, uri, position) == "capacity=3)"
        assert "class Depot" in fake.events()[-1]["prompt"]  # the index in memory has it
        said = logs(client)
        assert said.count(FULL) == 1, said  # once, for every save that failed
        assert "Discarding" not in said and "Traceback" not in said
        assert store.is_dir() and any(store.iterdir())  # kept, not discarded
    finally:
        filler.unlink()

    added(client, workspace / "inventory" / "shed.py", depot_module("Shed"))
    said = await wait_for_log(client, "saved again", timeout=10)
    assert said.count("saved again") == 1
