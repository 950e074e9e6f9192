"""`headstart backend start|stop|status`: the shared local vLLM's state file, lock and
process group, through the real command, with tests/fake_vllm.py standing in for
`vllm serve` (HEADSTART_VLLM_COMMAND). The GPU and CPU command lines, and the messages
for a missing GPU, vLLM or model, are checked from `plan_launch` directly: this machine
has no GPU to run them on.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import FAKE_VLLM, ROOT, require_router, server_env
from fake_openai import FakeBackend

from server.backend.launch_plan import (
    COMMAND_ENV,
    BackendStartError,
    LaunchSpec,
    Machine,
    plan_launch,
)
from server.backend.local_vllm import SCRIPT
from server.backend.process import state_lock
from server.backend.router import place_replicas
from server.config import load_settings

H200 = "GPU 0: NVIDIA H200 (UUID: GPU-0b1c2d3e)"
GPU_VLLM = ("/opt/vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server")


def headstart(backend_home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`headstart backend ARGS` as a user runs it, with the fake vLLM as `vllm serve`."""
    return subprocess.run(
        [sys.executable, "-m", "server", "backend", *args],
        env=server_env(HEADSTART_HOME=str(backend_home), **{COMMAND_ENV: FAKE_VLLM}, **env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def state_of(backend_home: Path) -> dict[str, object] | None:
    path = backend_home / "backend" / "state.json"
    return json.loads(path.read_text()) if path.exists() else None


def alive(pid: int) -> bool:
    """Running, not a zombie (a killed process nobody reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_start_serves_with_the_completion_flags_and_status_and_stop_follow_it(
    backend_home: Path, model_dir: Path, tmp_path: Path
) -> None:
    args_file = tmp_path / "args.jsonl"

    started = headstart(
        backend_home, "start", "--model", str(model_dir), FAKE_VLLM_ARGS_FILE=str(args_file)
    )

    assert started.returncode == 0, started.stderr
    state = state_of(backend_home)
    assert state is not None
    url, pid = str(state["url"]), int(str(state["pid"]))
    assert f"ready: {url} serves Qwen2.5-Coder-1.5B (pid {pid}" in started.stdout
    assert "starting the command in HEADSTART_VLLM_COMMAND" in started.stderr
    port = str(state["port"])
    assert json.loads(args_file.read_text()) == [
        "--model", str(model_dir), "--served-model-name", "Qwen2.5-Coder-1.5B",
        "--host", "127.0.0.1", "--port", port, "--enable-prefix-caching",
        "--scheduling-policy", "priority",
        "--max-model-len", "8192",  # refactor's 6144 + 2048 outgrow completion's 4096 + 128
        "--gpu-memory-utilization", "0.5",
    ]  # fmt: skip
    served = httpx.get(f"{url}/models", trust_env=False).json()["data"]
    assert [model["id"] for model in served] == ["Qwen2.5-Coder-1.5B"]
    assert (backend_home / "backend" / "state.json").stat().st_mode & 0o777 == 0o600

    status = headstart(backend_home, "status", HEADSTART_BACKEND_MODE="local")
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"local vLLM: ready at {url}, serving Qwen2.5-Coder-1.5B" in status.stdout
    assert f"pid {pid}" in status.stdout
    assert "started by headstart backend start" in status.stdout
    as_json = json.loads(headstart(backend_home, "status", "--json").stdout)
    assert as_json["local"]["pid"] == pid and as_json["localReady"] is True
    assert as_json["localModels"] == ["Qwen2.5-Coder-1.5B"]

    stopped = headstart(backend_home, "stop")
    assert stopped.returncode == 0
    assert f"stopped the local vLLM at {url} (pid {pid}, SIGTERM)" in stopped.stdout
    assert wait_gone(pid)
    assert state_of(backend_home) is None
    after = headstart(backend_home, "status", HEADSTART_BACKEND_MODE="local")
    assert after.returncode == 1
    assert "local vLLM: not running" in after.stdout
    assert "no local vLLM is running" in headstart(backend_home, "stop").stdout


def test_two_starts_at_once_start_one_vllm_and_share_it(
    backend_home: Path, model_dir: Path, tmp_path: Path
) -> None:
    args_file = tmp_path / "args.jsonl"
    env = server_env(
        HEADSTART_HOME=str(backend_home),
        FAKE_VLLM_ARGS_FILE=str(args_file),
        FAKE_VLLM_LOAD_S="1.5",  # the second arrives while the first is still loading
        **{COMMAND_ENV: FAKE_VLLM},
    )
    command = [sys.executable, "-m", "server", "backend", "start", "--model", str(model_dir)]
    starts = [
        subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [start.communicate(timeout=120) for start in starts]

    assert [start.returncode for start in starts] == [0, 0], outputs
    assert len(args_file.read_text().splitlines()) == 1  # one vLLM started
    state = state_of(backend_home)
    assert state is not None
    for stdout, _ in outputs:
        assert f"ready: {state['url']} serves Qwen2.5-Coder-1.5B (pid {state['pid']}" in stdout
    assert sum("already running" in stderr for _, stderr in outputs) == 1


def test_a_start_waits_while_another_process_holds_the_lock(
    backend_home: Path, model_dir: Path, tmp_path: Path
) -> None:
    args_file = tmp_path / "args.jsonl"
    env = server_env(
        HEADSTART_HOME=str(backend_home),
        FAKE_VLLM_ARGS_FILE=str(args_file),
        **{COMMAND_ENV: FAKE_VLLM},
    )
    command = [sys.executable, "-m", "server", "backend", "start", "--model", str(model_dir)]

    with state_lock():  # as another window does while it reads, starts or stops
        start = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        time.sleep(2.0)
        assert start.poll() is None and not args_file.exists()
    stdout, _ = start.communicate(timeout=120)

    assert start.returncode == 0
    assert "ready: " in stdout and len(args_file.read_text().splitlines()) == 1


def test_a_killed_vllm_is_found_stale_its_leftovers_ended_and_a_new_one_can_start(
    backend_home: Path, model_dir: Path, tmp_path: Path
) -> None:
    engine_file = tmp_path / "engine.pid"
    env = {"FAKE_VLLM_ENGINE": "1", "FAKE_VLLM_ENGINE_PID_FILE": str(engine_file)}
    assert headstart(backend_home, "start", "--model", str(model_dir), **env).returncode == 0
    state = state_of(backend_home)
    assert state is not None
    pid, engine = int(str(state["pid"])), int(engine_file.read_text())
    assert alive(engine)

    os.kill(pid, signal.SIGKILL)  # the API server dies; its engine process lives on
    assert wait_gone(pid)

    status = headstart(backend_home, "status", HEADSTART_BACKEND_MODE="local")
    assert status.returncode == 1
    assert f"removed the record of a local vLLM that is gone (pid {pid})" in status.stdout
    assert "local vLLM: not running" in status.stdout
    assert state_of(backend_home) is None
    assert wait_gone(engine), "the orphaned engine process still holds the GPU"

    again = headstart(backend_home, "start", "--model", str(model_dir))
    assert again.returncode == 0, again.stderr
    restarted = state_of(backend_home)
    assert restarted is not None and restarted["pid"] != pid


def test_stop_ends_the_whole_process_group_even_an_engine_that_ignores_sigterm(
    backend_home: Path, model_dir: Path, tmp_path: Path
) -> None:
    engine_file = tmp_path / "engine.pid"
    env = {
        "FAKE_VLLM_ENGINE": "1",
        "FAKE_VLLM_ENGINE_PID_FILE": str(engine_file),
        "FAKE_VLLM_ENGINE_IGNORES_TERM": "1",
    }
    assert headstart(backend_home, "start", "--model", str(model_dir), **env).returncode == 0
    state = state_of(backend_home)
    assert state is not None
    pid, engine = int(str(state["pid"])), int(engine_file.read_text())

    stopped = headstart(backend_home, "stop", "--timeout", "1")

    assert "SIGKILL: it ignored SIGTERM" in stopped.stdout
    assert wait_gone(pid) and wait_gone(engine)
    assert state_of(backend_home) is None


def test_a_vllm_that_exits_during_start_up_is_shown_with_its_log(
    backend_home: Path, model_dir: Path
) -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"

    started = headstart(backend_home, "start", "--model", str(model_dir), FAKE_VLLM_FAIL=oom)

    assert started.returncode == 1
    assert "vLLM exited with code 1 during start-up (out of memory: lower" in started.stderr
    assert f"last lines of {backend_home / 'backend' / 'vllm.log'}" in started.stderr
    assert oom in started.stderr
    assert state_of(backend_home) is None


def test_a_port_in_use_is_named_with_what_answers_there(
    backend_home: Path, model_dir: Path, fake: FakeBackend, tmp_path: Path
) -> None:
    args_file = tmp_path / "args.jsonl"

    started = headstart(
        backend_home, "start", "--model", str(model_dir), "--port", str(fake.port),
        FAKE_VLLM_ARGS_FILE=str(args_file),
    )  # fmt: skip

    assert started.returncode == 1
    assert f"port {fake.port} on 127.0.0.1 is in use" in started.stderr
    assert "serving fake-coder (not one Headstart started" in started.stderr
    assert not args_file.exists()
    assert state_of(backend_home) is None


def test_start_without_a_model_says_how_to_name_one(backend_home: Path) -> None:
    started = headstart(backend_home, "start")

    assert started.returncode == 1
    assert "no model to serve: set backend.local.model" in started.stderr
    assert "'dummy'" in started.stderr


def test_a_corrupt_state_file_is_discarded(backend_home: Path) -> None:
    (backend_home / "backend").mkdir(parents=True)
    (backend_home / "backend" / "state.json").write_text('{"pid": "half a reco')

    status = headstart(backend_home, "status", HEADSTART_BACKEND_MODE="local")

    assert status.returncode == 1
    assert "local vLLM: not running" in status.stdout
    assert state_of(backend_home) is None


# --- the command lines and messages for machines this one is not ------------------------


def spec_for(model: Path | None, **settings: object) -> LaunchSpec:
    local = {"model": None if model is None else str(model)}
    layer = {"backend": {"local": local}, **settings}
    return LaunchSpec.from_settings(load_settings(layer, environ={}))


def test_on_a_gpu_vllm_serve_gets_the_completion_settings(model_dir: Path) -> None:
    budget = {"completion": {"contextTokens": 16384, "multilineMaxTokens": 256}}
    launch = plan_launch(
        spec_for(model_dir, **budget), Machine(gpus=(H200,), gpu_launcher=GPU_VLLM), port=8123
    )

    assert launch.device == "gpu"
    assert launch.description == "vLLM on this machine's GPU (NVIDIA H200)"
    assert launch.command == (
        *GPU_VLLM, "--model", str(model_dir), "--served-model-name", "Qwen2.5-Coder-1.5B",
        "--host", "127.0.0.1", "--port", "8123", "--enable-prefix-caching",
        "--scheduling-policy", "priority",
        "--max-model-len", "16640", "--gpu-memory-utilization", "0.5",
    )  # fmt: skip
    assert launch.env["HF_HUB_OFFLINE"] == "1"  # a local folder: never ask the hub
    assert not launch.dummy_weights and launch.notes == ()


def test_the_settings_reach_the_command_line(model_dir: Path) -> None:
    local = {
        "model": str(model_dir),
        "servedModelName": "coder",
        "gpuMemoryUtilization": 0.3,
        "maxModelLen": 4096,
        "extraArgs": ["--quantization", "fp8"],
    }
    spec = LaunchSpec.from_settings(load_settings({"backend": {"local": local}}, environ={}))
    launch = plan_launch(spec, Machine(gpus=(H200,), gpu_launcher=("vllm", "serve")), port=9)

    assert launch.command == (
        "vllm", "serve", "--model", str(model_dir), "--served-model-name", "coder",
        "--host", "127.0.0.1", "--port", "9", "--enable-prefix-caching",
        "--scheduling-policy", "priority",
        "--max-model-len", "4096", "--gpu-memory-utilization", "0.3", "--quantization", "fp8",
    )  # fmt: skip


def test_the_context_length_stops_at_the_models_own_limit(model_dir: Path) -> None:
    (model_dir / "config.json").write_text(json.dumps({"max_position_embeddings": 4096}))

    launch = plan_launch(spec_for(model_dir), Machine(gpus=(H200,), gpu_launcher=GPU_VLLM), port=1)

    assert launch.command[launch.command.index("--max-model-len") + 1] == "4096"
    assert "the model's limit, not the 8192 the prompt budgets ask for" in launch.notes[0]


def test_without_a_gpu_the_cpu_build_serves_through_vllm_local_sh(model_dir: Path) -> None:
    launch = plan_launch(spec_for(model_dir), Machine(cpu_python="/venv/bin/python"), port=8124)

    assert launch.device == "cpu"
    assert launch.description.startswith("vLLM's CPU build (no GPU found here")
    assert launch.command == (
        "bash", str(SCRIPT), "serve-cpu", "8124", str(model_dir), "Qwen2.5-Coder-1.5B",
        "auto", "8192",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("machine", "model_name", "message"),
    [
        (
            Machine(gpus=(H200,)),
            "model",
            "found a GPU (NVIDIA H200) but no vLLM to run on it: install it into this "
            "environment with `pip install 'headstart[vllm]'`",
        ),
        (Machine(), "model", "no GPU found here (nvidia-smi lists none), and vLLM's CPU build"),
        (Machine(), "model", "`make test` does it too"),
        (Machine(gpus=(H200,), gpu_launcher=GPU_VLLM), None, "no model to serve"),
        (Machine(gpus=(H200,), gpu_launcher=GPU_VLLM), "missing", "missing is not a folder"),
        (Machine(gpus=(H200,), gpu_launcher=GPU_VLLM), "empty", "empty has no config.json"),
    ],
)
def test_what_is_missing_is_said_with_what_to_do(
    machine: Machine, model_name: str | None, message: str, model_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    folders = {"model": model_dir, "missing": tmp_path / "missing", "empty": tmp_path / "empty"}
    chosen = None if model_name is None else folders[model_name]

    with pytest.raises(BackendStartError) as raised:
        plan_launch(spec_for(chosen), machine, port=1)

    assert message in str(raised.value)


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_replicas_start_behind_vllm_router_answer_through_it_and_stop_together(
    backend_home: Path, model_dir: Path, tmp_path: Path
) -> None:
    require_router()
    args_file = tmp_path / "args.jsonl"

    started = headstart(
        backend_home, "start", "--model", str(model_dir), "--replicas", "2",
        "--gpu-memory-utilization", "0.8", FAKE_VLLM_ARGS_FILE=str(args_file),
    )  # fmt: skip

    assert started.returncode == 0, started.stderr
    state = state_of(backend_home)
    assert state is not None
    workers = state["workers"]
    assert isinstance(workers, list) and len(workers) == 2
    url, router_pid = str(state["url"]), int(str(state["pid"]))
    assert "vllm-router in front of 2 replicas" in started.stderr
    assert str(state["command"][0]).endswith("vllm-router")  # type: ignore[index]
    # no GPU here: the two replicas split the memory share, each on its own port
    starts = [json.loads(line) for line in args_file.read_text().splitlines()]
    assert [flag(argv, "--gpu-memory-utilization") for argv in starts] == ["0.4", "0.4"]
    ports = {flag(argv, "--port") for argv in starts}
    assert ports == {worker["url"].split(":")[-1].removesuffix("/v1") for worker in workers}
    assert str(state["port"]) not in ports
    # the router answers for them: a completion through its URL comes from a replica
    served = httpx.get(f"{url}/models", trust_env=False, timeout=10).json()["data"]
    assert [model["id"] for model in served] == ["Qwen2.5-Coder-1.5B"]
    reply = httpx.post(
        f"{url}/completions",
        json={"model": "Qwen2.5-Coder-1.5B", "prompt": "def f():", "max_tokens": 8},
        headers={"X-Session-ID": "one-document"},
        trust_env=False,
        timeout=10,
    )
    assert reply.status_code == 200 and reply.json()["choices"][0]["text"]

    status = headstart(backend_home, "status", HEADSTART_BACKEND_MODE="local")
    assert status.returncode == 0, status.stdout + status.stderr
    for index, worker in enumerate(workers, 1):
        assert f"replica {index}: {worker['url']}, pid {worker['pid']}, answering" in status.stdout

    stopped = headstart(backend_home, "stop")
    assert stopped.returncode == 0
    assert f"stopped the local vLLM at {url} (pid {router_pid}" in stopped.stdout
    assert all(wait_gone(pid) for pid in [router_pid, *(int(w["pid"]) for w in workers)])
    assert state_of(backend_home) is None


def test_a_replica_that_fails_to_start_is_named_and_the_rest_are_stopped(
    backend_home: Path, model_dir: Path, tmp_path: Path
) -> None:
    require_router()
    started = headstart(
        backend_home, "start", "--model", str(model_dir), "--replicas", "2",
        FAKE_VLLM_FAIL="CUDA out of memory", FAKE_VLLM_FAIL_ONCE=str(tmp_path / "failed"),
        FAKE_VLLM_LOAD_S="1",
    )  # fmt: skip

    assert started.returncode == 1
    assert re.search(r"vLLM replica [12] exited with code 1 during start-up", started.stderr)
    assert "out of memory: lower backend.local.gpuMemoryUtilization" in started.stderr
    assert state_of(backend_home) is None
    deadline = time.monotonic() + 10
    while processes_of(backend_home) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_of(backend_home) == []


def processes_of(home: Path) -> list[int]:
    """Live processes started for this HEADSTART_HOME (the replicas and the router)."""
    mark = f"HEADSTART_HOME={home}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if mark in (entry / "environ").read_bytes() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize(
    ("replicas", "gpus", "expected"),
    [
        (2, 2, [(0, 0.8), (1, 0.8)]),
        (2, 1, [(0, 0.4), (0, 0.4)]),
        (3, 2, [(0, 0.4), (1, 0.4), (0, 0.4)]),
        (2, 0, [(None, 0.4), (None, 0.4)]),
    ],
)
def test_replicas_take_a_gpu_each_or_split_one(
    replicas: int, gpus: int, expected: list[tuple[int | None, float]]
) -> None:
    placed = place_replicas(replicas, gpus, 0.8)
    assert [(p.gpu, p.memory_share) for p in placed] == expected
