"""`headstart backend start --engine vllm|sglang|trtllm`: each engine's command line from
the same settings, what is said where an engine is missing, and a start end to end with
tests/fake_vllm.py standing in for the engine (it answers as the engine would: its
`owned_by`, its metrics). No GPU here, so the GPU command lines are checked from
`plan_launch` directly, as in test_backend_process.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from conftest import FAKE_VLLM, ROOT, server_env

from server.backend.engines import ServeArgs, engine_command, engine_of
from server.backend.launch_plan import BackendStartError, LaunchSpec, Machine, plan_launch
from server.config import load_settings

H200 = "GPU 0: NVIDIA H200 (UUID: GPU-0b1c2d3e)"
SGLANG = ("/opt/sglang/bin/python", "-m", "sglang.launch_server")
TRTLLM = ("/opt/trt/bin/trtllm-serve",)
ARGS = ServeArgs("/models/coder", "coder", "127.0.0.1", 8001, 8192, 0.5)


def spec(model: Path, engine: str, **local: object) -> LaunchSpec:
    layer = {"backend": {"local": {"model": str(model), "engine": engine, **local}}}
    return LaunchSpec.from_settings(load_settings(layer, environ={}))


def test_each_engine_gets_prefix_caching_the_context_length_and_priorities() -> None:
    vllm = engine_command("vllm", ("vllm", "serve"), ARGS).argv
    assert vllm == (
        "vllm", "serve", "--model", "/models/coder", "--served-model-name", "coder",
        "--host", "127.0.0.1", "--port", "8001", "--enable-prefix-caching",
        "--scheduling-policy", "priority", "--max-model-len", "8192",
        "--gpu-memory-utilization", "0.5",
    )  # fmt: skip

    sglang = engine_command("sglang", SGLANG, ARGS).argv
    assert sglang[:15] == (
        *SGLANG, "--model-path", "/models/coder", "--served-model-name", "coder",
        "--host", "127.0.0.1", "--port", "8001", "--context-length", "8192",
        "--mem-fraction-static", "0.5",
    )  # fmt: skip
    assert "--disable-radix-cache" not in sglang  # the radix cache is its prefix cache
    assert {"--enable-priority-scheduling", "--schedule-low-priority-values-first"} <= set(sglang)
    assert "--enable-metrics" in sglang
    buckets = sglang[sglang.index("--bucket-time-to-first-token") + 1 :]
    assert buckets[:3] == ("0.005", "0.01", "0.02")  # its own start at 0.1 s

    trtllm = engine_command("trtllm", TRTLLM, ARGS, Path("/tmp/o.yml"))
    assert trtllm.argv == (
        *TRTLLM, "/models/coder", "--backend", "pytorch", "--host", "127.0.0.1",
        "--port", "8001", "--max_seq_len", "8192", "--extra_llm_api_options", "/tmp/o.yml",
    )  # fmt: skip
    options = json.loads(trtllm.files["/tmp/o.yml"])  # YAML reads JSON as it is
    assert options["kv_cache_config"] == {
        "enable_block_reuse": True,
        "free_gpu_memory_fraction": 0.5,
    }
    assert options["scheduler_config"] == {"waiting_queue_policy": "priority"}
    assert options["return_perf_metrics"] is True  # its Prometheus metrics


def test_random_weights_and_extra_arguments_reach_every_engine() -> None:
    dummy = ServeArgs("/m", "m", "127.0.0.1", 1, 4096, 0.3, True, ("--flag", "x"))
    for engine, launcher in (("vllm", ("vllm", "serve")), ("sglang", SGLANG)):
        argv = engine_command(engine, launcher, dummy).argv  # type: ignore[arg-type]
        assert argv[-4:] == ("--load-format", "dummy", "--flag", "x")
    trtllm = engine_command("trtllm", TRTLLM, dummy, Path("o.yml"))
    assert trtllm.argv[-2:] == ("--flag", "x")
    assert json.loads(trtllm.files["o.yml"])["load_format"] == "dummy"


def test_a_backend_says_which_engine_it_is_in_owned_by() -> None:
    assert [engine_of(o) for o in ("vllm", "sglang", "tensorrt_llm", "openai")] == [
        "vllm", "sglang", "trtllm", None,
    ]  # fmt: skip


def test_the_settings_choose_the_engine_and_its_launcher(
    model_dir: Path, backend_home: Path
) -> None:
    sglang = plan_launch(spec(model_dir, "sglang"), Machine((H200,), SGLANG), port=9)
    assert sglang.command[: len(SGLANG) + 2] == (*SGLANG, "--model-path", str(model_dir))
    assert sglang.description == "SGLang on this machine's GPU (NVIDIA H200)"
    assert sglang.engine == "sglang"

    asked = spec(model_dir, "trtllm", servedModelName="coder", maxModelLen=4096)
    trtllm = plan_launch(asked, Machine((H200,), TRTLLM), port=9)
    assert trtllm.command[1] == str(model_dir)
    assert trtllm.served_model_name == model_dir.name  # what trtllm-serve calls it
    assert "serves the model under its folder's name" in trtllm.notes[0]
    (path,) = trtllm.files
    assert path == str(backend_home / "backend" / "trtllm-9.yml")
    assert trtllm.command[trtllm.command.index("--extra_llm_api_options") + 1] == path
    assert trtllm.command[trtllm.command.index("--max_seq_len") + 1] == "4096"


@pytest.mark.parametrize(
    ("engine", "machine", "message"),
    [
        (
            "sglang",
            Machine((H200,)),
            "found a GPU (NVIDIA H200) but no SGLang to run on it: install it with "
            "`pip install 'sglang[all]'`",
        ),
        ("trtllm", Machine((H200,)), "but no TensorRT-LLM to run on it: install TensorRT-LLM"),
        ("trtllm", Machine(cpu_python="/venv/bin/python"), "TensorRT-LLM runs on an NVIDIA GPU"),
        ("sglang", Machine(), "SGLang runs on an NVIDIA GPU only: no GPU found here"),
    ],
)
def test_a_missing_engine_is_said_with_what_to_do(
    engine: str, machine: Machine, message: str, model_dir: Path
) -> None:
    with pytest.raises(BackendStartError) as raised:
        plan_launch(spec(model_dir, engine), machine, port=1)
    assert message in str(raised.value)


def headstart(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", "backend", *args],
        env=server_env(HEADSTART_HOME=str(home), **env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_engine_that_is_not_here_is_a_message_not_a_traceback(
    backend_home: Path, model_dir: Path
) -> None:
    started = headstart(backend_home, "start", "--engine", "sglang", "--model", str(model_dir))

    assert started.returncode == 1
    assert "headstart backend start: " in started.stderr
    assert "SGLang" in started.stderr and "Traceback" not in started.stderr
    assert not (backend_home / "backend" / "state.json").exists()


def test_a_trtllm_start_writes_its_options_and_is_served_and_recorded_as_trtllm(
    backend_home: Path, model_dir: Path, tmp_path: Path
) -> None:
    args_file = tmp_path / "args.jsonl"
    env = {"HEADSTART_VLLM_COMMAND": FAKE_VLLM, "FAKE_VLLM_ARGS_FILE": str(args_file)}

    started = headstart(
        backend_home, "start", "--engine", "trtllm", "--model", str(model_dir), **env
    )

    assert started.returncode == 0, started.stderr
    state = json.loads((backend_home / "backend" / "state.json").read_text())
    assert state["engine"] == "trtllm"
    (argv,) = [json.loads(line) for line in args_file.read_text().splitlines()]
    assert argv[0] == str(model_dir) and "--max_seq_len" in argv
    options = json.loads(Path(argv[argv.index("--extra_llm_api_options") + 1]).read_text())
    assert options["kv_cache_config"]["enable_block_reuse"] is True
    served = httpx.get(f"{state['url']}/models", trust_env=False).json()["data"]
    assert [(m["id"], m["owned_by"]) for m in served] == [(model_dir.name, "tensorrt_llm")]

    again = headstart(backend_home, "start", "--model", str(model_dir), **env)
    assert "the shared backend runs trtllm, not vllm" in again.stderr
    assert headstart(backend_home, "stop").returncode == 0
