"""`headstart backend start|status|stop` with a real vLLM: the CPU build here (the GPU
build on a GPU machine), a tiny dummy-weight model, in a private HEADSTART_HOME.

It proves what the stand-in cannot: that vLLM takes the command line (the context length
it reports is the one the budgets ask for), answers completions, and that `stop` ends
its whole process tree (API server, engine core, workers). About 1.5-2.5 minutes on a
2-core machine; skipped like the rest of the real-vLLM tier when vLLM is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from conftest import ROOT, server_env

from server.backend.local_vllm import cpu_build_python, headstart_home
from server.backend.process import group_alive, stop_backend

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(900)]


def test_backend_start_serves_completions_and_stop_ends_every_vllm_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.environ.get("HEADSTART_TEST_VLLM_URL"):
        pytest.skip("the real-vLLM tier runs against HEADSTART_TEST_VLLM_URL, not this machine")
    venv = cpu_build_python()
    if venv is None:
        if os.environ.get("HEADSTART_REQUIRE_VLLM"):
            pytest.fail("vLLM's CPU build is not installed (make test installs it)")
        pytest.skip("vLLM's CPU build is not installed (make test installs it)")
    home = tmp_path / "home"
    home.mkdir()
    if (headstart_home() / "models").is_dir():  # the dummy model folder, made already
        (home / "models").symlink_to(headstart_home() / "models")
    env = server_env(HEADSTART_HOME=str(home), VLLM_CPU_VENV=str(venv.parent.parent))
    monkeypatch.setenv("HEADSTART_HOME", str(home))

    def headstart(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "server", "backend", *args],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=840,
        )

    try:
        # eager mode: no torch.compile warm-up, which halves the CPU build's start-up
        started = headstart("start", "--model", "dummy", "--", "--enforce-eager")
        assert started.returncode == 0, started.stdout + started.stderr
        state = json.loads((home / "backend" / "state.json").read_text())
        url, pid = state["url"], state["pid"]

        model = httpx.get(f"{url}/models", timeout=10, trust_env=False).json()["data"][0]
        assert model["max_model_len"] == 8192  # the completion and refactor budgets' need
        assert "--enforce-eager" in state["command"]
        answer = httpx.post(
            f"{url}/completions",
            json={"model": model["id"], "prompt": "def add(a, b):", "max_tokens": 4},
            timeout=120,
            trust_env=False,
        ).json()
        assert answer["usage"]["completion_tokens"] == 4
        listed = subprocess.run(["ps", "-e", "-o", "pgid=,stat="], capture_output=True, text=True)
        group = [line for line in listed.stdout.splitlines() if line.split()[0] == str(pid)]
        assert len(group) >= 2, "vLLM runs its engine in processes of its own"

        status = subprocess.run(
            [sys.executable, "-m", "server", "backend", "status"],
            env={**env, "HEADSTART_BACKEND_MODE": "local"},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert status.returncode == 0, status.stdout
        assert f"local vLLM: ready at {url}, serving {model['id']}" in status.stdout

        stopped = headstart("stop")
        assert f"stopped the local vLLM at {url} (pid {pid}, SIGTERM)" in stopped.stdout
        assert not group_alive(pid)
        assert not (home / "backend" / "state.json").exists()
    finally:
        stop_backend(timeout_s=10)
