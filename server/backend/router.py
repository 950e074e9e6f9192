"""Several local vLLM replicas behind vllm-router (`backend.local.replicas` > 1): where the
router's binary is, its command line, and how the replicas share the GPUs.

The router is vLLM's own (PyPI `vllm-router`, a Rust binary): editors talk to it like to
any backend, and it hashes each request's `X-Session-ID` (`backend.affinity`) onto a
replica, so a document's prompts keep landing where its prefix is cached. When a replica
fails, the router's circuit breaker takes it out after two errors and a resumed stream
goes to another one (tests/test_router.py).
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROUTER_FLAGS: Final = ("--policy", "consistent_hash", "--cb-failure-threshold", "2")
"""Consistent hashing on the session key, and a replica taken out after two failures (as
docs/team.md starts it by hand)."""
INSTALL_ROUTER = "pip install 'headstart[router]' (the vllm-router wheel, Linux x86-64)"


def router_binary() -> str | None:
    """vllm-router next to this Python (its wheel's script), else on PATH."""
    here = shutil.which("vllm-router", path=str(Path(sys.executable).parent))
    return here or shutil.which("vllm-router")


def router_command(
    binary: str,
    host: str,
    port: int,
    metrics_port: int,
    worker_urls: list[str],
    startup_timeout_s: float,
) -> tuple[str, ...]:
    """The router on host:port in front of `worker_urls` (base URLs, no /v1), waiting up to
    `startup_timeout_s` for them to load."""
    return (
        binary,
        "--host",
        host,
        "--port",
        str(port),
        "--worker-urls",
        *worker_urls,
        *ROUTER_FLAGS,
        "--worker-startup-timeout-secs",
        str(max(1, int(startup_timeout_s))),
        "--prometheus-port",
        str(metrics_port),
    )


@dataclass(frozen=True)
class Placement:
    """Where one replica runs: its GPU (None: wherever the launcher puts it) and its share
    of that GPU's memory."""

    gpu: int | None
    memory_share: float


def place_replicas(replicas: int, gpus: int, memory_share: float) -> list[Placement]:
    """One replica a GPU while there are GPUs enough, each with the whole `memory_share`;
    otherwise they take turns over the GPUs and split it (two on one GPU at 0.8 get 0.4
    each). Without a GPU (the CPU build, a custom command) they split it too."""
    if gpus >= replicas:
        return [Placement(index, memory_share) for index in range(replicas)]
    per_gpu = -(-replicas // max(gpus, 1))
    share = round(memory_share / per_gpu, 3)
    return [Placement(index % gpus if gpus else None, share) for index in range(replicas)]
