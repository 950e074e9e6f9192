"""The shared local vLLM: `headstart backend start|stop|status` and `backend.mode: local`.

One vLLM per user and machine serves every editor window: a GPU holds one copy of the
model well, and a second copy would take the memory the prefix cache needs. Whoever needs
it first (the CLI or a language server) starts it under a lock and records it in a state
file; everyone after that finds it there. The record is a hint, never trusted blindly:
its pid must still be the process that was started (same start time, still leading its
own process group) and must answer /health before anyone uses it; a stale record is
removed, with whatever was left of its process group.

What to start (the command line, model and context length) is planned by
server.backend.launch_plan; this module starts it, records it and stops it. Nothing here
knows about LSP: server.cli and server.lsp.local_backend call it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import httpx

from server.backend.launch_plan import (
    DUMMY,
    HOST,
    BackendStartError,
    Launch,
    LaunchSpec,
    Machine,
    backend_dir,
    inspect_machine,
    plan_launch,
)
from server.backend.local_vllm import (
    free_port,
    served_models,
    tail,
)
from server.backend.router import (
    INSTALL_ROUTER,
    place_replicas,
    router_binary,
    router_command,
)

if sys.platform != "win32":
    import fcntl

log = logging.getLogger(__name__)
Progress = Callable[[str], None]


class StartCancelled(Exception):
    """The caller stopped waiting (the editor shut down); the vLLM itself keeps starting."""


# --- what runs: the state file -----------------------------------------------------------


@dataclass(frozen=True)
class Worker:
    """One replica behind the router: its own process group, port and log."""

    pid: int
    process_start: int | None
    url: str
    log_path: str


@dataclass(frozen=True)
class BackendState:
    """The record of a started vLLM, shared by every process of the user (state.json)."""

    pid: int
    """Leads the process group of vLLM and its engine processes."""
    process_start: int | None
    """The pid's start time (Linux clock ticks since boot): a reused pid does not match."""
    url: str
    port: int
    model: str
    """The name it serves the model under."""
    model_path: str
    device: str
    description: str
    dummy_weights: bool
    started_at: float
    command: tuple[str, ...]
    log_path: str
    started_by: str
    max_model_len: int | None = None
    workers: tuple[Worker, ...] = ()
    """With replicas: the vLLMs behind the router, which `pid` and `url` are then."""
    engine: str = "vllm"
    """The serving engine (records older than engines were all vLLM)."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> BackendState:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {k: v for k, v in raw.items() if k in known}
        values["command"] = tuple(values.get("command", ()))
        values["workers"] = tuple(Worker(**worker) for worker in values.get("workers", ()))
        state = cls(**values)
        if not isinstance(state.pid, int) or state.pid <= 1 or not isinstance(state.url, str):
            raise ValueError(f"bad pid or url: {state.pid!r}, {state.url!r}")
        return state


def state_path() -> Path:
    return backend_dir() / "state.json"


def read_state() -> BackendState | None:
    """The recorded backend; a file that cannot be read as one is removed (it would only
    ever block a start), with a log line."""
    path = state_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        return BackendState.from_json(text)
    except (ValueError, TypeError) as exc:
        log.warning("removing %s: not a backend record (%s)", path, exc)
        path.unlink(missing_ok=True)
        return None


def write_state(state: BackendState) -> None:
    """Replace the record atomically, so that a reader never sees half of it."""
    path = state_path()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write_private(temporary, state.to_json())
    os.replace(temporary, path)


def _write_private(path: Path | str, text: str) -> None:
    """`text` in a file only this user may read (0600), on disk before this returns."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


def remove_state() -> None:
    state_path().unlink(missing_ok=True)


@contextlib.contextmanager
def state_lock(timeout_s: float = 120.0, cancel: threading.Event | None = None) -> Iterator[None]:
    """Hold the backend lock: between reading the record and acting on it (start, stop,
    clean) no other process may act, or two editor windows starting at once would start
    two vLLMs. Each holder keeps it for seconds, not for vLLM's start-up."""
    if sys.platform == "win32":
        raise BackendStartError("a local vLLM backend needs Linux (or macOS); use a remote one")
    path = backend_dir() / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if cancel is not None and cancel.is_set():
                    raise StartCancelled from None
                if time.monotonic() > deadline:
                    raise BackendStartError(
                        f"another Headstart process has held {path} for over {timeout_s:.0f} s"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


# --- processes ---------------------------------------------------------------------------

PROC = Path("/proc")


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state letter, process group, start time) from /proc, or None if there is no entry."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
    except OSError:
        return None
    after_name = text[text.rfind(")") + 2 :].split()  # the name may hold spaces and ')'
    return after_name[0], int(after_name[2]), int(after_name[19])


def process_start_time(pid: int) -> int | None:
    stat = _proc_stat(pid)
    return stat[2] if stat else None


def is_running(state: BackendState | Worker) -> bool:
    """Whether the recorded pid is still the process that was started (vLLM, or the router
    in front of replicas): alive, not a zombie, the same start time, and leading its own
    process group (as it was started)."""
    if PROC.joinpath("self", "stat").exists():
        stat = _proc_stat(state.pid)
        if stat is None:
            return False
        letter, group, started = stat
        if letter in "ZX" or group != state.pid:
            return False
        return state.process_start is None or started == state.process_start
    try:
        os.kill(state.pid, 0)
        return os.getpgid(state.pid) == state.pid
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not ours


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies waiting to be reaped do not)."""
    if not PROC.joinpath("self", "stat").exists():
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _proc_stat(int(entry.name))) is not None:
            letter, group, _ = stat
            if group == pgid and letter not in "ZX":
                return True
    return False


def terminate_group(pgid: int, timeout_s: float) -> bool:
    """SIGTERM the whole group (vLLM and its engine processes), SIGKILL what is left after
    `timeout_s`; True if SIGKILL was needed."""
    if not _signal_group(pgid, signal.SIGTERM):
        return False
    if _wait_group_gone(pgid, timeout_s):
        return False
    _signal_group(pgid, signal.SIGKILL)
    _wait_group_gone(pgid, 10.0)
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False


def _wait_group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# --- health ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Health:
    healthy: bool
    """GET /health answered 200."""
    models: list[str] | None
    """What GET /v1/models lists; None if it did not answer."""

    @property
    def ready(self) -> bool:
        return self.healthy and self.models is not None


def check_health(url: str, timeout_s: float = 2.0) -> Health:
    base = url.rstrip("/").removesuffix("/v1")
    try:
        healthy = httpx.get(f"{base}/health", timeout=timeout_s, trust_env=False).status_code
    except httpx.HTTPError:
        return Health(False, None)
    return Health(healthy == 200, served_models(url, timeout_s))


# --- start, status, stop -----------------------------------------------------------------


@dataclass
class Claim:
    """The backend a caller will use: one it just started, or one that was running."""

    state: BackendState
    started_here: bool
    process: subprocess.Popen[bytes] | None = None
    notes: list[str] = field(default_factory=list)
    worker_processes: list[subprocess.Popen[bytes]] = field(default_factory=list)


def claim_backend(
    spec: LaunchSpec,
    *,
    machine: Machine | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    started_by: str = "headstart backend start",
) -> Claim:
    """Find the running backend or start one, under the lock; does not wait for it to load.

    Raises BackendStartError (what is missing, a port in use, a command that cannot run).
    """
    say = progress or (lambda message: None)
    with state_lock(cancel=cancel):
        state = read_state()
        if state is not None and not is_running(state):
            say(f"removed the record of a vLLM that is no longer running (pid {state.pid})")
            _clean_stale(state)
            state = None
        if state is not None:
            return Claim(state, started_here=False, notes=_mismatches(spec, state))
        machine = machine or inspect_machine(engine=spec.engine)
        if spec.replicas > 1 and spec.engine != "vllm":
            raise BackendStartError(
                f"backend.local.replicas is {spec.replicas}: replicas behind vllm-router are "
                f"started for engine vllm only, not {spec.engine}"
            )
        if spec.replicas > 1:
            claim = _start_replicas(spec, machine, started_by)
            write_state(claim.state)
            say(f"starting {claim.state.description} (router log: {claim.state.log_path})")
            return claim
        launch = plan_launch(spec, machine, _port_for(spec.port))
        process, state = _spawn(launch, spec.max_model_len, started_by)
        write_state(state)
    say(f"starting {launch.description}, model {launch.served_model_name} (log: {state.log_path})")
    return Claim(state, True, process, list(launch.notes))


def _start_replicas(spec: LaunchSpec, machine: Machine, started_by: str) -> Claim:
    """`spec.replicas` vLLMs on free ports, placed over the GPUs (`place_replicas`), and
    vllm-router on the asked port in front of them; the router is the record's process.
    What was started is stopped again if a later part cannot start."""
    binary = router_binary()
    if binary is None:
        raise BackendStartError(
            f"backend.local.replicas is {spec.replicas}, which needs vllm-router in front of "
            f"them, and it is not installed: {INSTALL_ROUTER}"
        )
    router_port = _port_for(spec.port)
    placements = place_replicas(spec.replicas, len(machine.gpus), spec.gpu_memory_utilization)
    processes: list[subprocess.Popen[bytes]] = []
    workers: list[Worker] = []
    try:
        for index, place in enumerate(placements, start=1):
            one = replace(spec, gpu_memory_utilization=place.memory_share, replicas=1)
            launch = plan_launch(one, machine, free_port())
            if place.gpu is not None:
                launch = replace(launch, env={**launch.env, "CUDA_VISIBLE_DEVICES": str(place.gpu)})
            process, worker_state = _spawn(
                launch, spec.max_model_len, started_by, log_name=f"vllm-{index}.log"
            )
            processes.append(process)
            workers.append(
                Worker(process.pid, worker_state.process_start, worker_state.url,
                       worker_state.log_path)
            )  # fmt: skip
        urls = [worker.url.removesuffix("/v1") for worker in workers]
        command = router_command(
            binary, HOST, router_port, free_port(), urls, spec.startup_timeout_s
        )
        where = f"{len(machine.gpus)} GPU(s)" if machine.gpus else "no GPU"
        router = replace(
            launch,
            command=command,
            env={},
            port=router_port,
            description=f"vllm-router in front of {spec.replicas} replicas ({where}): "
            + launch.description,
        )
        process, state = _spawn(router, spec.max_model_len, started_by, log_name="router.log")
    except BaseException:
        for started in processes:
            terminate_group(started.pid, 10.0)
        raise
    state = replace(state, workers=tuple(workers))
    return Claim(state, True, process, list(launch.notes), worker_processes=processes)


def _clean_stale(state: BackendState) -> None:
    """Under the lock: end what is left of a dead backend's process group (an engine
    process whose API server died still holds the GPU's memory), and remove its record
    if it is still the current one (a newer start may have replaced it)."""
    for pid in (state.pid, *(worker.pid for worker in state.workers)):
        if group_alive(pid):
            log.warning("ending what is left of vLLM's process group %d", pid)
            terminate_group(pid, 10.0)
    current = read_state()
    if current is not None and current.pid == state.pid:
        remove_state()


def _mismatches(spec: LaunchSpec, state: BackendState) -> list[str]:
    if spec.engine != state.engine:
        return [
            f"the shared backend runs {state.engine}, not {spec.engine}; "
            "`headstart backend stop` and start again to switch (every window shares it)"
        ]
    asked = (spec.model or "").strip()
    if not asked:
        return []
    same = (asked == DUMMY and state.dummy_weights) or asked in (state.model, state.model_path)
    if not same and Path(asked).expanduser().exists():
        same = Path(asked).expanduser().resolve() == Path(state.model_path).resolve()
    if same:
        return []
    return [
        f"the shared vLLM serves {state.model} ({state.model_path}), not {asked}; "
        "`headstart backend stop` and start again to switch (every window shares it)"
    ]


def _port_for(wanted: int) -> int:
    """`wanted`, checked to be free, or any free port for 0."""
    if wanted == 0:
        return free_port()
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, wanted))
            return wanted
        except OSError:
            pass
    models = served_models(f"http://{HOST}:{wanted}/v1", timeout_s=1.0)
    found = (
        f"an OpenAI-compatible server answers there, serving {', '.join(models) or 'no models'}"
        " (not one Headstart started: to use it, set backend.mode to remote and backend.url "
        f"to http://{HOST}:{wanted}/v1)"
        if models is not None
        else "another program listens there"
    )
    raise BackendStartError(
        f"port {wanted} on {HOST} is in use: {found}; or set backend.local.port to another "
        "port, or 0 for any free one"
    )


def _spawn(
    launch: Launch, max_model_len: int, started_by: str, log_name: str = "vllm.log"
) -> tuple[subprocess.Popen[bytes], BackendState]:
    log_path = backend_dir() / log_name
    for path, text in launch.files.items():
        _write_private(path, text)
    with log_path.open("wb") as log_file:
        log_file.write(f"# headstart: {shlex.join(launch.command)}\n".encode())
        log_file.flush()
        try:
            process = subprocess.Popen(
                launch.command,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env={**os.environ, **launch.env},
                start_new_session=True,  # its own process group: stopped as a whole
            )
        except OSError as exc:
            raise BackendStartError(
                f"could not run {launch.command[0]!r} ({exc.strerror or exc})"
            ) from None
    state = BackendState(
        pid=process.pid,
        process_start=process_start_time(process.pid),
        url=f"http://{HOST}:{launch.port}/v1",
        port=launch.port,
        model=launch.served_model_name,
        model_path=launch.model_path,
        device=launch.device,
        description=launch.description,
        dummy_weights=launch.dummy_weights,
        started_at=time.time(),
        command=launch.command,
        log_path=str(log_path),
        started_by=started_by,
        max_model_len=max_model_len,
        engine=launch.engine,
    )
    return process, state


FAILURE_HINTS = (
    ("address already in use", "the port was taken: set backend.local.port to a free one, or 0"),
    (
        "less than desired gpu memory utilization",
        "the GPU has less free memory than backend.local.gpuMemoryUtilization asks for: "
        "lower it, or free the GPU",
    ),
    (
        "out of memory",
        "out of memory: lower backend.local.gpuMemoryUtilization or the context length "
        "(backend.local.maxModelLen), or use a smaller model",
    ),
    (
        "than the derived max_model_len",
        "the model's config allows a shorter context: set backend.local.maxModelLen, or "
        "lower completion.contextTokens / refactor.contextTokens",
    ),
    (
        "larger than the available kv cache",
        "the context length needs more KV cache than the memory share leaves: raise "
        "backend.local.gpuMemoryUtilization or lower backend.local.maxModelLen",
    ),
)
"""Phrases of vLLM's start-up errors (0.25-0.28), and what to do about each."""


def startup_failure(log_path: str, why: str) -> BackendStartError:
    """`why`, with the hint that matches vLLM's log, and the log's last lines."""
    lines = tail(Path(log_path), 25).lower()
    hints = [hint for needle, hint in FAILURE_HINTS if needle in lines]
    return BackendStartError(f"{why} ({hints[0]})" if hints else why, log_path)


def _exited_during_start(claim: Claim) -> tuple[str, str] | None:
    """(what exited, its log) when the claimed vLLM, its router or one of its replicas
    is gone; None while all run."""
    state, process = claim.state, claim.process
    code = process.poll() if process is not None else None
    name = "vllm-router" if state.workers else "vLLM"
    if code is not None or not is_running(state):
        return (f"{name} exited" + (f" with code {code}" if code is not None else "")), (
            state.log_path
        )
    processes: list[subprocess.Popen[bytes] | None] = [*claim.worker_processes] or [None] * len(
        state.workers
    )
    for index, (worker, started) in enumerate(zip(state.workers, processes, strict=True), 1):
        code = started.poll() if started is not None else None
        if code is not None or not is_running(worker):
            why = f"vLLM replica {index} exited" + (f" with code {code}" if code else "")
            return why, worker.log_path
    return None


def _ready(state: BackendState) -> bool:
    """The backend answers /health and lists its models, and so does every replica behind
    its router (the router answers as soon as one does)."""
    if not check_health(state.url, timeout_s=1.0).ready:
        return False
    return all(check_health(worker.url, timeout_s=1.0).healthy for worker in state.workers)


def wait_until_ready(
    claim: Claim,
    timeout_s: float,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    report_every_s: float = 2.0,
) -> None:
    """Wait until the claimed vLLM answers /health and /v1/models.

    If it exits first, its record is removed and BackendStartError carries its log's tail.
    If the time runs out, a vLLM started here is stopped (nobody else is waiting on it
    longer than its starter); one started by another process is left to its starter.
    StartCancelled if `cancel` is set: the vLLM goes on starting for whoever comes next.
    """
    state, process = claim.state, claim.process
    say = progress or (lambda message: None)
    deadline = time.monotonic() + timeout_s
    began = time.monotonic()
    reported = began
    try:
        while True:
            if (exited := _exited_during_start(claim)) is not None:
                with state_lock():
                    _clean_stale(state)
                why, log_path = exited
                raise startup_failure(log_path, f"{why} during start-up")
            if _ready(state):
                return
            if cancel is not None and cancel.is_set():
                raise StartCancelled
            now = time.monotonic()
            if now > deadline:
                if claim.started_here:
                    with state_lock():
                        _clean_stale(state)
                raise startup_failure(
                    state.log_path, f"vLLM did not answer within {timeout_s:.0f} s"
                )
            if now - reported >= report_every_s:
                reported = now
                last = tail(Path(state.log_path), 1).strip()[:160]
                say(
                    f"loading, {now - began:.0f} s: {last}"
                    if last
                    else f"loading, {now - began:.0f} s"
                )
            if cancel is not None:
                cancel.wait(0.25)
            else:
                time.sleep(0.25)
    finally:
        for started in (process, *claim.worker_processes):
            if started is not None:
                # the starter is vLLM's parent: reap it whenever it ends, so it never
                # lingers as a zombie that still looks alive
                threading.Thread(target=started.wait, name="vllm-reaper", daemon=True).start()


@dataclass(frozen=True)
class BackendStatus:
    state: BackendState | None
    health: Health | None = None
    stale: BackendState | None = None
    """A record whose process was gone; removed by this call."""
    workers: tuple[Health, ...] = ()
    """With replicas: each one's own health, in the record's order."""

    @property
    def ready(self) -> bool:
        return self.health is not None and self.health.ready


def backend_status() -> BackendStatus:
    """The recorded backend and whether it answers; a stale record is cleaned up."""
    with state_lock():
        state = read_state()
        if state is not None and not is_running(state):
            _clean_stale(state)
            return BackendStatus(None, stale=state)
    if state is None:
        return BackendStatus(None)
    workers = tuple(check_health(worker.url) for worker in state.workers)
    return BackendStatus(state, check_health(state.url), workers=workers)


@dataclass(frozen=True)
class Stopped:
    state: BackendState | None
    was_running: bool
    killed: bool = False
    """It had to be SIGKILLed: SIGTERM did not end the whole group in time."""


def stop_backend(timeout_s: float = 30.0) -> Stopped:
    """SIGTERM the recorded vLLM's process group, SIGKILL after `timeout_s`, remove the record."""
    with state_lock(timeout_s=timeout_s + 60.0):
        state = read_state()
        if state is None:
            return Stopped(None, was_running=False)
        if not is_running(state):
            _clean_stale(state)
            return Stopped(state, was_running=False)
        killed = terminate_group(state.pid, timeout_s)
        for worker in state.workers:  # the router first: no request reaches a dying replica
            killed = terminate_group(worker.pid, timeout_s) or killed
        remove_state()
        return Stopped(state, was_running=True, killed=killed)
