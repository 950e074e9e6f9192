"""`headstart doctor` run as a user runs it, against the fake model over real HTTP, and
`headstart serve`'s one line for a person at a terminal.

Each doctor run is its own process with its own HOME (so the editors it finds are the ones
a test put there) and its own cache folder.
"""

from __future__ import annotations

import json
import os
import pty
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, server_env
from fake_openai import FakeBackend
from tokenizer_helpers import save_tiny_tokenizer
from tokenizers import Tokenizer, models, pre_tokenizers

VENV_BIN = Path(sys.executable).parent
"""Where `headstart` is installed beside this Python: on PATH for the doctor's runs."""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME with the VS Code extension installed and a Neovim config that loads
    clients/neovim/headstart.lua, as a user who followed the README has."""
    home = tmp_path / "home"
    extension = home / ".vscode" / "extensions" / "headstart.headstart-0.1.0"
    extension.mkdir(parents=True)
    (extension / "package.json").write_text(json.dumps({"name": "headstart", "version": "0.1.0"}))
    nvim = home / ".config" / "nvim"
    nvim.mkdir(parents=True)
    (nvim / "init.lua").write_text(f"dofile('{ROOT}/clients/neovim/headstart.lua')\n")
    return home


def doctor(
    home: Path, settings: dict[str, Any], *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    environment = server_env(
        **{"HOME": str(home), "HEADSTART_CACHE_DIR": str(home / "cache"), **env}
    )
    environment.pop("XDG_CONFIG_HOME", None)
    environment.pop("XDG_CACHE_HOME", None)
    environment["PATH"] = f"{VENV_BIN}{os.pathsep}{environment.get('PATH', '')}"
    return subprocess.run(
        [sys.executable, "-m", "server", "doctor", "--settings", json.dumps(settings), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def checks_of(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    report = json.loads(done.stdout)
    assert report["ok"] == (done.returncode == 0)
    checks: list[dict[str, Any]] = report["checks"]
    return checks


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_against_the_fake_model_every_check_is_ok(home: Path, tmp_path: Path) -> None:
    tokenizer = save_tiny_tokenizer(tmp_path / "model")
    with FakeBackend(default_text=" a + b\n") as fake:
        fake.script(tokenizer=tokenizer)  # /tokenize answers with the same tokenizer's ids
        settings = {"completion": {"tokenizer": str(tokenizer)}}
        done = doctor(home, settings, "--json", HEADSTART_BACKEND_URL=fake.url)
        assert len(fake.events()) == 1  # the round trip was a real streamed completion
    assert done.returncode == 0, done.stdout + done.stderr
    checks = checks_of(done)
    by_area = {check["area"]: check for check in checks}
    assert {"settings", "backend", "completion", "tokenizer", "cache", "editors"} <= set(by_area)
    not_ok = [c for c in checks if c["status"] != "OK" and not c["summary"].startswith("JetBrains")]
    assert not_ok == []
    assert (
        f"{fake.url} (backend.url) answers: vLLM serving fake-coder"
        in by_area["backend"]["summary"]
    )
    assert "answer ' a + b\\n'" in by_area["completion"]["summary"]
    assert "the backend's own (its /tokenize makes the same ids)" in by_area["tokenizer"]["summary"]
    settings_lines = by_area["settings"]["details"]
    assert f"backend.url = '{fake.url}'  (HEADSTART_BACKEND_URL)" in settings_lines
    assert f"completion.tokenizer = '{tokenizer}'  (--settings)" in settings_lines
    assert "backend.mode = 'remote'  (default)" in settings_lines
    summaries = [c["summary"] for c in checks if c["area"] == "editors"]
    assert any(s.startswith("VS Code: extension 0.1.0 at ") for s in summaries)
    assert any(
        s.startswith(f"Neovim: {home}/.config/nvim/init.lua sets up headstart") for s in summaries
    )
    assert any(s.startswith("editors can start `headstart serve`") for s in summaries)
    assert "0 project store(s) of schema" in by_area["cache"]["summary"]


def test_a_dead_backend_url_fails_with_the_fix(home: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = doctor(home, {"backend": {"url": url}})
    assert done.returncode == 1
    assert f"FAIL  backend: {url} (backend.url) does not answer" in done.stdout
    assert "fix: start the backend (`headstart backend start` runs vLLM" in done.stdout
    assert "broken" in done.stdout.splitlines()[-1]


def test_an_unwritable_cache_folder_fails(home: Path, fake: FakeBackend) -> None:
    blocker = home / "not-a-folder"
    blocker.write_text("")
    done = doctor(home, {"backend": {"url": fake.url}}, "--json", HEADSTART_CACHE_DIR=str(blocker))
    assert done.returncode == 1
    [cache] = [check for check in checks_of(done) if check["area"] == "cache"]
    assert cache["status"] == "FAIL"
    assert cache["summary"].startswith(f"{blocker} (HEADSTART_CACHE_DIR) cannot be written")
    assert "set cacheDir (HEADSTART_CACHE_DIR) to a folder you can write" in cache["fix"]


def test_a_tokenizer_other_than_the_backends_fails(
    home: Path, tmp_path: Path, fake: FakeBackend
) -> None:
    ours = save_tiny_tokenizer(tmp_path / "ours")
    other = Tokenizer(models.WordLevel({"[UNK]": 0, "def": 1}, unk_token="[UNK]"))
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    other.save(str(tmp_path / "theirs.json"))
    fake.script(tokenizer=tmp_path / "theirs.json")
    settings = {"backend": {"url": fake.url}, "completion": {"tokenizer": str(ours)}}
    done = doctor(home, settings, "--json")
    assert done.returncode == 1
    [tokenizer] = [check for check in checks_of(done) if check["area"] == "tokenizer"]
    assert (
        tokenizer["status"] == "FAIL" and "is not the backend's tokenizer" in tokenizer["summary"]
    )


def test_settings_that_do_not_validate_fail_and_name_the_field(home: Path) -> None:
    done = doctor(home, {"completion": {"maxTokens": 0}})
    assert done.returncode == 1
    assert "FAIL  settings: invalid Headstart settings: completion.maxTokens" in done.stdout


def test_without_editors_and_tokenizer_nothing_is_broken_but_it_says_what_to_do(
    tmp_path: Path, fake: FakeBackend
) -> None:
    bare = tmp_path / "bare-home"
    bare.mkdir()
    done = doctor(bare, {"backend": {"url": fake.url}}, "--json")
    assert done.returncode == 0, done.stdout
    statuses = {check["summary"].split(":")[0]: check for check in checks_of(done)}
    assert statuses["VS Code"]["status"] == "INFO"
    assert "code --install-extension" in statuses["VS Code"]["fix"]
    [tokenizer] = [c for c in checks_of(done) if c["area"] == "tokenizer"]
    assert tokenizer["status"] == "WARN" and "set completion.tokenizer" in tokenizer["fix"]


def read_stderr_until(proc: subprocess.Popen[bytes], text: bytes, timeout: float) -> bytes:
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stderr, selectors.EVENT_READ)
        while text not in seen and time.monotonic() < deadline:
            if selector.select(deadline - time.monotonic()):
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                seen += chunk
    return seen


def test_serve_at_a_terminal_says_what_it_is_on_stderr_only() -> None:
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "serve"],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    os.close(secondary)
    try:
        said = read_stderr_until(proc, b"headstart doctor", timeout=30)
    finally:
        os.close(primary)  # the terminal goes away: the server's stdin ends
        proc.terminate()
        stdout, _ = proc.communicate(timeout=30)
    assert b"speaks LSP on stdin/stdout" in said and b"`headstart doctor`" in said
    assert stdout == b""


def test_serve_started_by_an_editor_says_nothing_of_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "server", "serve"],
        input=b"",
        capture_output=True,
        env=server_env(),
        timeout=60,
    )
    assert b"headstart doctor" not in done.stderr and done.stdout == b""
