"""Settings over LSP: what a repository cannot choose, and updates applied part by part.

An editor may answer `workspace/configuration` (and push `didChangeConfiguration`) from a
repository's own files: VS Code's folder settings, a project's `.neoconf.json` in Neovim.
Such a repository must not choose where the API key goes, which environment variable is
sent, what runs or what is written (DESIGN.md, "Trust and safety"): the server takes those
settings from initializationOptions and HEADSTART_* variables alone.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from conftest import (
    SERVER_COMMAND,
    end_session,
    fast_settings,
    guarded_config,
    server_env,
    server_with_env,
    start_session,
)
from fake_openai import FakeBackend
from lsp_helpers import logs, suggest_at, wait_for_log, wait_for_shown
from lsprotocol import types
from pytest_lsp import LanguageClient

TRAP = Path(tempfile.mkdtemp(prefix="headstart-trap-"))
VLLM_RAN = TRAP / "vllm-ran"
"""Written by the stand-in for `vllm serve`, with its arguments, if it ever runs."""
(TRAP / "vllm.py").write_text(
    f"import pathlib, sys\npathlib.Path({str(VLLM_RAN)!r}).write_text(' '.join(sys.argv))\n"
)
CANARY = "canary-not-an-api-key"
"""Another secret in the server's environment, which a repository names as the key's."""


GUARDED_ENV = server_env(
    HEADSTART_API_KEY="s3cret",
    HEADSTART_TEST_CANARY=CANARY,
    HEADSTART_HOME=str(TRAP / "home"),
    HEADSTART_VLLM_COMMAND=f"{sys.executable} {TRAP / 'vllm.py'}",
)
del GUARDED_ENV["HEADSTART_CACHE_DIR"]  # the test's initializationOptions name it


@pytest_lsp.fixture(config=guarded_config(SERVER_COMMAND, GUARDED_ENV))
async def guarded(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A started server with an API key, another secret and a trap for `vllm serve`."""
    yield
    await end_session(lsp_client)


def repository_settings(attacker: str, written: Path) -> dict[str, Any]:
    """Everything a hostile repository's settings try, and one harmless setting."""
    return {
        "backend": {
            "url": attacker,
            "apiKeyEnv": "HEADSTART_TEST_CANARY",
            "mode": "local",
            "local": {"model": "dummy", "extraArgs": ["--trust-remote-code"], "port": 1},
        },
        "completion": {"tokenizer": str(written / "tokenizer.json"), "multilineMaxTokens": 77},
        "log": {"file": str(written / "server.log"), "requestTrace": str(written / "trace")},
        "cacheDir": str(written / "cache"),
    }


IGNORED = (
    "backend.mode, backend.url, backend.apiKeyEnv, backend.local.model, backend.local.port, "
    "backend.local.extraArgs, completion.tokenizer, log.file, log.requestTrace, cacheDir"
)


@pytest.mark.parametrize("how", ["pulled", "pushed"])
async def test_workspace_configuration_cannot_choose_the_key_a_command_or_a_path(
    guarded: LanguageClient, fake: FakeBackend, workspace: Path, tmp_path: Path, how: str
) -> None:
    fake.script([], default_text="mine()\n")
    written = tmp_path / "written"
    with FakeBackend(default_text="stolen()\n") as attacker:
        hostile = repository_settings(attacker.url, written)
        if how == "pulled":
            guarded.set_configuration(hostile, section="headstart")
        options = fast_settings(fake.url) | {"cacheDir": str(tmp_path / "cache")}
        await start_session(guarded, "vscode", workspace, options)
        if how == "pushed":
            await wait_for_log(guarded, "indexed ")  # after `initialized` pulled its settings
            guarded.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"headstart": hostile})
            )
        await wait_until(lambda: logs(guarded).count("settings applied") == 2)

        assert await suggest_at(guarded, workspace / "trust.py", "x = █\n") == "mine()"
        assert attacker.events() == []
    request = fake.events()[-1]
    assert request["headers"]["authorization"] == "Bearer s3cret"
    assert CANARY not in str(request)
    assert request["max_tokens"] == 77  # the harmless setting of the same object applies
    assert not written.exists()  # no log, trace, cache or tokenizer read there
    assert not VLLM_RAN.exists()
    assert "local vLLM" not in logs(guarded)
    assert f"ignored {IGNORED} from the workspace configuration" in logs(guarded)
    await wait_for_shown(guarded, "ignored backend.mode")


async def wait_until(done: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not done():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.fixture
def unwritable_log_file(tmp_path: Path) -> Path:
    """A log file path whose folder is a plain file, so it cannot be written."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    return blocker / "server.log"


async def test_a_log_file_that_cannot_be_written_leaves_the_other_settings_applied(
    fresh: LanguageClient, workspace: Path, unwritable_log_file: Path
) -> None:
    """...and says so; the next settings update tries the file again."""
    log_file = unwritable_log_file
    with FakeBackend(default_text="switched()\n") as backend:
        options = fast_settings(backend.url)
        options["log"] = {"file": str(log_file)}
        await start_session(fresh, "vscode", workspace, options)
        shown = await wait_for_shown(fresh, "log.file")
        assert f"cannot write {log_file}" in shown
        assert "The other settings are applied" in shown

        assert await suggest_at(fresh, workspace / "switch.py", "x = █\n") == "switched()"
        assert backend.events()

        log_file.parent.unlink()
        fresh.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"headstart": {"log": {"level": "debug"}}})
        )
        await wait_until(lambda: log_file.exists() and "settings applied" in log_file.read_text())


async def test_a_log_file_from_the_environment_that_cannot_be_written_still_lets_it_start(
    fake: FakeBackend, workspace: Path, unwritable_log_file: Path
) -> None:
    log_file = unwritable_log_file
    fake.script([], default_text="started()\n")
    env = server_env(HEADSTART_LOG_FILE=str(log_file))
    async with server_with_env(env) as client:
        await start_session(client, "vscode", workspace, fast_settings(fake.url))
        shown = await wait_for_shown(client, "log.file")
        assert f"cannot write {log_file}" in shown
        assert "not logging to a file" in shown
        assert await suggest_at(client, workspace / "started.py", "x = █\n") == "started()"
