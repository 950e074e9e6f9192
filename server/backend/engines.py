"""The serving engines `headstart backend start` can run, and each one's command line.

vLLM, SGLang and TensorRT-LLM all serve the OpenAI-compatible API Headstart talks to, but
each spells what completion needs in its own flags: a prefix cache (vLLM's
`--enable-prefix-caching`, SGLang's radix cache, on by default, TensorRT-LLM's KV block
reuse), a context length that fits the longest request, request priorities where the
engine schedules by them, and the metrics the bench reads. The same inputs go in for every
engine (`ServeArgs`), so a comparison starts each one as alike as their flags allow.

Nothing here starts a process: server.backend.launch_plan plans it, server.backend.process
spawns and records it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, get_args

from server.config import Engine

ENGINES: Final[tuple[Engine, ...]] = get_args(Engine)
TITLES: Final[Mapping[Engine, str]] = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "trtllm": "TensorRT-LLM",
}
OWNED_BY: Final[Mapping[str, Engine]] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "tensorrt_llm": "trtllm",
}
"""What each engine's /v1/models says in `owned_by`, which is how a running backend tells
which engine it is."""
INSTALL: Final[Mapping[Engine, str]] = {
    "vllm": "install it into this environment with `pip install 'headstart[vllm]'` (or `pip "
    "install vllm`), or set HEADSTART_VLLM_PYTHON to a Python that has it",
    "sglang": "install it with `pip install 'sglang[all]'` into this environment, or set "
    "HEADSTART_SGLANG_PYTHON to a Python that has it",
    "trtllm": "install TensorRT-LLM (`pip install tensorrt_llm`, or NVIDIA's container) so "
    "that `trtllm-serve` is on the PATH or next to this Python",
}

SGLANG_TTFT_BUCKETS: Final = ("0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.15")
SGLANG_TTFT_BUCKETS_ABOVE: Final = ("0.2", "0.3", "0.5", "1", "2", "5", "10")
"""SGLang's own time-to-first-token buckets start at 0.1 s, which would put every
keystroke's first token in one bucket; these are finer where typing lives."""


TRTLLM_REFUSES: Final = ("return_token_ids", "cache_salt")
"""vLLM's completion fields that TensorRT-LLM answers with 400: its request models forbid
fields they do not know (serve/openai_protocol.py, extra="forbid")."""


def body_for(engine: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """A completion body made for vLLM, as `engine` takes it.

    TensorRT-LLM refuses the fields it does not know, and reads `priority` as a float in
    [0, 1] served highest first, where vLLM serves its 0 (a keystroke) first: 0, 1, 2
    become 1.0, 0.5, 0.0. SGLang takes vLLM's fields as they are (and with
    --schedule-low-priority-values-first, vLLM's order)."""
    if engine != "trtllm":
        return dict(body)
    adapted = {key: value for key, value in body.items() if key not in TRTLLM_REFUSES}
    if isinstance(adapted.get("priority"), int):
        adapted["priority"] = min(1.0, max(0.0, 1.0 - adapted["priority"] / 2))
    return adapted


def engine_of(owned_by: str) -> Engine | None:
    """The engine behind a /v1/models `owned_by`; None for any other server."""
    return OWNED_BY.get(owned_by)


TAKES_VLLM_FIELDS: Final = frozenset({"vllm", "sglang"})
"""Engines whose completions take vLLM's own fields as vLLM does (`priority`, lower first;
prompts of token ids; `stop_token_ids`; `return_token_ids`, streamed per chunk) and that
tokenize on request at `/tokenize`: SGLang's protocol.py and serving_completions.py."""


def takes_vllm_fields(owned_by: str) -> bool:
    """Whether a backend that says `owned_by` may be sent vLLM's fields; other
    OpenAI-compatible servers may refuse them."""
    return engine_of(owned_by) in TAKES_VLLM_FIELDS


@dataclass(frozen=True)
class ServeArgs:
    """What every engine is started with: the same inputs, whatever the engine."""

    model_path: str
    served_model_name: str
    host: str
    port: int
    max_model_len: int
    memory_share: float
    """Share of the GPU's memory: vLLM's --gpu-memory-utilization, SGLang's
    --mem-fraction-static; TensorRT-LLM's KV cache takes this share of what is free after
    the weights."""
    dummy_weights: bool = False
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineCommand:
    argv: tuple[str, ...]
    files: Mapping[str, str] = field(default_factory=dict)
    """Files to write before starting it: path -> text (TensorRT-LLM's options)."""


def engine_command(
    engine: Engine, launcher: tuple[str, ...], args: ServeArgs, options_path: Path | None = None
) -> EngineCommand:
    """The command line that serves `args` with `engine`, run by `launcher` (`vllm serve`,
    `python -m sglang.launch_server`, `trtllm-serve`, or a stand-in). TensorRT-LLM takes
    most of its settings from a file: `options_path` is where it goes."""
    if engine == "vllm":
        return EngineCommand((*launcher, *vllm_args(args)))
    if engine == "sglang":
        return EngineCommand((*launcher, *sglang_args(args)))
    path = options_path or Path(f"trtllm-{args.port}.yml")
    return EngineCommand((*launcher, *trtllm_args(args, path)), {str(path): trtllm_options(args)})


def _served_at(args: ServeArgs) -> tuple[str, ...]:
    """The name and address vLLM and SGLang both take in these flags."""
    return (
        "--served-model-name",
        args.served_model_name,
        "--host",
        args.host,
        "--port",
        str(args.port),
    )


def vllm_args(args: ServeArgs) -> tuple[str, ...]:
    return (
        "--model",
        args.model_path,
        *_served_at(args),
        "--enable-prefix-caching",
        "--scheduling-policy",
        "priority",
        "--max-model-len",
        str(args.max_model_len),
        "--gpu-memory-utilization",
        f"{args.memory_share:g}",
        *(("--load-format", "dummy") if args.dummy_weights else ()),
        *args.extra_args,
    )


def sglang_args(args: ServeArgs) -> tuple[str, ...]:
    """`python -m sglang.launch_server`: the radix cache (its prefix cache) is on unless
    --disable-radix-cache; priorities are scheduled with --enable-priority-scheduling, and
    --schedule-low-priority-values-first makes 0 (a keystroke) go first, as in vLLM."""
    return (
        "--model-path",
        args.model_path,
        *_served_at(args),
        "--context-length",
        str(args.max_model_len),
        "--mem-fraction-static",
        f"{args.memory_share:g}",
        "--enable-priority-scheduling",
        "--schedule-low-priority-values-first",
        "--enable-metrics",
        "--bucket-time-to-first-token",
        *SGLANG_TTFT_BUCKETS,
        *SGLANG_TTFT_BUCKETS_ABOVE,
        *(("--load-format", "dummy") if args.dummy_weights else ()),
        *args.extra_args,
    )


def trtllm_args(args: ServeArgs, options_path: Path) -> tuple[str, ...]:
    """`trtllm-serve MODEL`: the PyTorch backend (no engine build), the context length, and
    the rest in the options file (--extra_llm_api_options). It has no served-name flag in
    every release: it serves a model folder under the folder's name."""
    return (
        args.model_path,
        "--backend",
        "pytorch",
        "--host",
        args.host,
        "--port",
        str(args.port),
        "--max_seq_len",
        str(args.max_model_len),
        "--extra_llm_api_options",
        str(options_path),
        *args.extra_args,
    )


def trtllm_options(args: ServeArgs) -> str:
    """trtllm-serve's LLM API options, as YAML (written as JSON, which YAML reads as is).

    KV block reuse is its prefix cache; `return_perf_metrics` turns on its Prometheus
    metrics at /prometheus/metrics (its /metrics is JSON iteration stats); the waiting
    queue policy schedules by `priority`. The file replaces trtllm-serve's own
    kv_cache_config, so the memory share goes here too."""
    options: dict[str, object] = {
        "kv_cache_config": {
            "enable_block_reuse": True,
            "free_gpu_memory_fraction": args.memory_share,
        },
        "scheduler_config": {"waiting_queue_policy": "priority"},
        "return_perf_metrics": True,
        "enable_iter_perf_stats": True,
    }
    if args.dummy_weights:
        options["load_format"] = "dummy"
    return json.dumps(options, indent=2) + "\n"


def find_launcher(
    engine: Engine, environ: Mapping[str, str] | None = None
) -> tuple[str, ...] | None:
    """How to run `engine` on this machine's GPU, or None where it is not installed.

    Asks for the Python packages without importing them: importing vllm or sglang takes
    seconds."""
    environ = os.environ if environ is None else environ
    if engine == "trtllm":
        here = shutil.which("trtllm-serve", path=str(Path(sys.executable).parent))
        found = here or shutil.which("trtllm-serve", path=environ.get("PATH"))
        return (found,) if found else None
    variable = "HEADSTART_VLLM_PYTHON" if engine == "vllm" else "HEADSTART_SGLANG_PYTHON"
    python = environ.get(variable, sys.executable)
    if _has_module(python, engine):
        return (python, "-m", _SERVER_MODULE[engine])
    if engine == "vllm" and (executable := shutil.which("vllm", path=environ.get("PATH"))):
        return (executable, "serve")
    return None


_SERVER_MODULE: Final[Mapping[str, str]] = {
    "vllm": "vllm.entrypoints.openai.api_server",
    "sglang": "sglang.launch_server",
}


def _has_module(python: str, module: str) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    try:
        return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0
    except OSError:
        return False
