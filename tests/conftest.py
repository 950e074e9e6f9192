"""Shared fixtures: the fake model server, a copy of the sample project, LSP clients.

The server under test is always the real `python -m server serve` subprocess, driven over
stdio by pytest-lsp with the recorded capabilities of real editors.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

pytest.register_assert_rewrite("hang_guard")
from fake_openai import FakeBackend  # noqa: E402
from hang_guard import guarded_client, guarded_config  # noqa: E402
from lsp_helpers import cursor_at, open_document, suggestion  # noqa: E402

TEST_CACHE = Path(tempfile.mkdtemp(prefix="headstart-test-cache-"))
"""The servers under test keep their project caches here, not in the user's cache."""
SERVER_COMMAND = [sys.executable, "-m", "server", "serve"]
pytest_plugins = ("hang_guard",)


def load_benchmark(path: str) -> ModuleType:
    """benchmarks/PATH.py (e.g. "load/soak") as a module named after its file (the scripts
    are not a package); registered in sys.modules, where dataclasses look their module up."""
    name = Path(path).name
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{path}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def server_env(**extra: str) -> dict[str, str]:
    """The environment without any HEADSTART_* settings of the machine running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADSTART_")}
    env["PYTHONPATH"] = str(ROOT)
    env["HEADSTART_CACHE_DIR"] = str(TEST_CACHE)
    env.update(extra)
    return env


def editor_capabilities(editor: str) -> types.ClientCapabilities:
    """Recorded capabilities of real editors (pytest-lsp ships them).

    VS Code's recording predates LSP 3.18; vscode-languageclient 10 adds the
    inlineCompletion capability, so it is added here. Neovim 0.11 has none, which makes
    it the client for the textDocument/completion fallback.
    """
    if editor == "vscode":
        capabilities = client_capabilities("visual-studio-code")
        assert capabilities.text_document is not None
        capabilities.text_document.inline_completion = types.InlineCompletionClientCapabilities()
        return capabilities
    return client_capabilities("neovim@v0.11.0")


def fast_settings(url: str, **completion: object) -> dict[str, object]:
    """Settings with short timeouts, so misbehaving backends cost tests little time, and
    prefetching off unless asked for: its speculative requests would blur what the tests
    count of the model's requests (tests of prefetching turn it on)."""
    return {
        "backend": {
            "url": url,
            "connectTimeoutMs": 500,
            "firstChunkTimeoutMs": 1000,
            "chunkGapMs": 500,
            "totalTimeoutMs": 3000,
        },
        "completion": {"prefetch": False, **completion},
    }


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeBackend]:
    with FakeBackend() as backend:
        yield backend


@pytest.fixture
def fake(fake_server: FakeBackend) -> FakeBackend:
    """The fake model server, with its script and event log cleared."""
    fake_server.reset()
    return fake_server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the sample project."""
    return Path(shutil.copytree(ROOT / "examples" / "sample_project", tmp_path / "sample_project"))


async def start_session(
    client: LanguageClient, editor: str, workspace: Path, options: object
) -> None:
    """initialize + initialized as `editor` would send them, on a copy of the workspace.

    Like a real editor, the client accepts the capabilities the server registers
    (`client.registrations` keeps them)."""
    registrations: list[types.Registration] = []
    client.registrations = registrations  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        registrations.extend(params.registrations)

    uri = workspace.as_uri()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=editor_capabilities(editor),
            root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
            initialization_options=options,
        )
    )


async def first_completion(
    client: LanguageClient,
    backend: FakeBackend,
    workspace: Path,
    settings: object,
    typed: str,
) -> tuple[str, dict[str, Any]]:
    """Start a VS Code session with `settings`, open total.py as `typed` (█ marks the
    cursor) and ask once: the suggestion the editor is shown, and the one request the
    backend got for it."""
    await start_session(client, "vscode", workspace, settings)
    text, position = cursor_at(typed)
    uri = open_document(client, workspace / "total.py", text)
    shown = await suggestion(client, uri, position)
    (event,) = backend.events()
    return shown, event


CONFIG = guarded_config(SERVER_COMMAND, server_env())


@pytest_lsp.fixture(config=CONFIG, params=["vscode", "neovim"])
async def client(
    request: pytest.FixtureRequest, lsp_client: LanguageClient, fake: FakeBackend, workspace: Path
) -> AsyncIterator[None]:
    """A server session as VS Code and as Neovim start it, backed by the fake model."""
    lsp_client.editor = request.param  # type: ignore[attr-defined]
    await start_session(lsp_client, request.param, workspace, fast_settings(fake.url))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def vscode(
    lsp_client: LanguageClient, fake: FakeBackend, workspace: Path
) -> AsyncIterator[None]:
    """A server session as VS Code starts it, backed by the fake model."""
    await start_session(lsp_client, "vscode", workspace, fast_settings(fake.url))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def fresh(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A started server that the test initializes itself (with its own options)."""
    yield
    await end_session(lsp_client)


async def end_session(client: LanguageClient) -> None:
    """Shut the server down as an editor does. A server the test never initialized (it
    skipped first) is only told to exit: pytest-lsp sends nothing then, and its teardown
    would wait for the process for good."""
    if client.capabilities is None:
        client.exit(None)
    await client.shutdown_session()


@contextlib.asynccontextmanager
async def server_with_env(env: dict[str, str]) -> AsyncIterator[LanguageClient]:
    """A started server (the test initializes it) with `env` as its environment: for a
    setting that only initializationOptions and HEADSTART_* variables may give
    (server.config.MACHINE_SETTINGS) and a test's initializationOptions do not."""
    client = guarded_client()
    await client.start_io(*SERVER_COMMAND, env=env)
    try:
        yield client
        await end_session(client)
    finally:
        process = client._server
        if process is not None and process.returncode is None:
            process.kill()
        await client.stop()


@pytest_lsp.fixture(config=guarded_config(SERVER_COMMAND, server_env(HEADSTART_API_KEY="s3cret")))
async def keyed(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A started server whose environment holds HEADSTART_API_KEY=s3cret."""
    yield
    await end_session(lsp_client)


FAKE_VLLM = f"{shlex.quote(sys.executable)} {shlex.quote(str(TESTS / 'fake_vllm.py'))}"
"""HEADSTART_VLLM_COMMAND for tests: the stand-in for `vllm serve` (tests/fake_vllm.py)."""


@pytest.fixture
def backend_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private HEADSTART_HOME (the local backend's state file, lock and log) for this
    test and the processes it starts; whatever backend is left running is stopped."""
    from server.backend.process import stop_backend

    home = tmp_path / "home"
    monkeypatch.setenv("HEADSTART_HOME", str(home))
    yield home
    stop_backend(timeout_s=2)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    """A model folder as vLLM expects one (the stand-in loads nothing from it)."""
    folder = tmp_path / "Qwen2.5-Coder-1.5B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 32768}))
    return folder


def require_router() -> str:
    """The vllm-router binary of this environment; skips the test where its wheel cannot
    be installed, fails it where the end-to-end tests are required (CI)."""
    from server.backend.router import router_binary

    binary = router_binary()
    if binary is None:
        wheel_here = sys.platform == "linux" and platform.machine() == "x86_64"
        if wheel_here and os.environ.get("HEADSTART_REQUIRE_E2E"):
            pytest.fail("vllm-router is not installed (pip install -e '.[dev]')")
        pytest.skip("vllm-router is not installed (pip install -e '.[dev]')")
    return binary
