"""The `headstart` command: serve, index, demo, doctor, backend start|stop|status, bench
run|plot, aiapi generate."""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server import __version__
from server.aiapi.cli import add_aiapi_parser, run_aiapi

if TYPE_CHECKING:
    from server.backend.process import BackendStatus
    from server.config import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="headstart", description=__doc__)
    parser.add_argument("--version", action="version", version=f"headstart {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen for one client over TCP")

    index = commands.add_parser("index", help="index a folder into the project cache")
    index.add_argument("path", type=Path, help="the workspace root")
    index.add_argument("--cache-dir", type=Path, help="where the store goes")

    demo = commands.add_parser(
        "demo", help="drive the server over LSP on the sample project and print suggestions"
    )
    demo.add_argument("--backend-url", help="an OpenAI-compatible base URL (…/v1)")
    demo.add_argument("--model", help="a local model folder for the vLLM this starts")

    doctor = commands.add_parser(
        "doctor",
        help="check the backend, model, tokenizer, cache folder and editors; say what to fix",
        description="Check what Headstart needs, one line each with what to fix: the "
        "settings in effect and where each came from, the backend (engine, model, a tiny "
        "completion's latency), the tokenizer, the cache folder and each editor's setup. "
        "Exit code 1 when something is broken.",
    )
    doctor.add_argument(
        "--settings",
        default="{}",
        help="settings as JSON, as an editor sends them (HEADSTART_* variables still win)",
    )
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")

    backend = commands.add_parser("backend", help="the completion backend")
    backend_commands = backend.add_subparsers(dest="backend_command", required=True)
    start = backend_commands.add_parser(
        "start",
        help="start vLLM on this machine (shared by every editor window), unless it runs",
        description="Start vLLM on this machine's GPU (or vLLM's CPU build without one), "
        "or SGLang or TensorRT-LLM with --engine, with the settings completion needs, and "
        "record it so that every editor window "
        "with backend.mode 'local' shares it. Settings come from HEADSTART_* variables and "
        "these options.",
    )
    start.add_argument("--model", help="model folder to serve, or 'dummy' (random weights)")
    start.add_argument("--served-model-name", help="name to serve it under")
    start.add_argument("--port", type=int, help="port on 127.0.0.1 (default: any free one)")
    start.add_argument(
        "--gpu-memory-utilization", type=float, help="share of GPU memory (default 0.5)"
    )
    start.add_argument(
        "--max-model-len", type=int, help="context length (default: what the budgets need)"
    )
    start.add_argument("--timeout", type=int, help="seconds to wait for it (default 900)")
    start.add_argument(
        "--replicas", type=int, help="vLLMs to start behind vllm-router (default 1: no router)"
    )
    start.add_argument(
        "--engine",
        choices=["vllm", "sglang", "trtllm"],
        help="the serving engine (default vllm; sglang and trtllm need an NVIDIA GPU)",
    )
    start.add_argument(
        "vllm_args",
        nargs=argparse.REMAINDER,
        metavar="-- VLLM_ARGS",
        help="more arguments for the engine's server (`vllm serve`, ...), after --",
    )
    stop = backend_commands.add_parser("stop", help="stop the local vLLM (every window's)")
    stop.add_argument(
        "--timeout", type=float, default=30.0, help="seconds before SIGTERM becomes SIGKILL"
    )
    status = backend_commands.add_parser(
        "status", help="is the local vLLM running, and is the configured backend answering?"
    )
    status.add_argument("--json", action="store_true", help="print the state as JSON")

    bench = commands.add_parser("bench", help="measure completion latency under load")
    bench_commands = bench.add_subparsers(dest="bench_command", required=True)
    bench_run = bench_commands.add_parser(
        "run",
        help="simulated users type real files through their own servers, in load steps",
        description="Simulated editors, each a real LSP client of its own `headstart serve`, "
        "retype real lines of the workspace key by key against one backend, in load steps. "
        "Prints a table and writes OUT/results.json (then `headstart bench plot`).",
    )
    bench_run.add_argument(
        "workspace", nargs="?", type=Path, help="files to type (default: the sample project)"
    )
    bench_run.add_argument("--backend-url", help="an OpenAI-compatible base URL (…/v1)")
    bench_run.add_argument(
        "--users", default="1,10,50", help="users per load step, comma-separated (1,10,50)"
    )
    bench_run.add_argument(
        "--step-seconds", type=float, default=60.0, help="measured time of each step (60)"
    )
    bench_run.add_argument(
        "--warmup-seconds", type=float, default=10.0, help="unmeasured time before each (10)"
    )
    bench_run.add_argument("--out", type=Path, default=Path("bench-results"), help="folder")
    bench_run.add_argument(
        "--settings", default="{}", help="server settings as JSON, for every simulated editor"
    )
    bench_run.add_argument("--seed", type=int, default=0, help="the typing sessions' seed")
    bench_run.add_argument(
        "--speed", type=float, default=1.0, help="typing speed factor (2 = twice as fast)"
    )
    bench_run.add_argument(
        "--profile",
        choices=["typist", "developer"],
        default="typist",
        help="typist: type without pause (the stress figure, default); developer: bursts, "
        "pauses to read, moves within a file, Tab acceptances, from published studies "
        "(docs/bench.md)",
    )
    bench_run.add_argument(
        "--lines-per-visit",
        type=int,
        default=0,
        help="lines each user types in a file before going to another "
        "(0: a run of 1-4 lines, then anywhere)",
    )
    bench_run.add_argument(
        "--floor-prompts",
        type=int,
        default=200,
        help="the first user's model requests sent again straight to the backend, as its server "
        "sent them (the floor; 0: none)",
    )
    bench_run.add_argument("--workers", type=int, help="driver processes (default: 1 per 50)")
    bench_run.add_argument("--languages", help="only these languages, comma-separated")
    bench_run.add_argument(
        "--record", type=Path, help="trace each editor's backend requests to DIR/user-N.jsonl"
    )
    bench_run.add_argument(
        "--replay", type=Path, help="replay the traces of DIR (from --record) beside the editors"
    )
    bench_run.add_argument(
        "--replay-users", default="", help="replayed users per step, comma-separated (100,300)"
    )
    bench_run.add_argument(
        "--no-replay-salt",
        action="store_true",
        help="let replayed copies of one trace share vLLM's prefix cache",
    )
    bench_run.add_argument("--replay-drivers", type=int, help="processes (default: 1 per 200)")
    bench_run.add_argument(
        "--replay-ramp-seconds",
        type=float,
        default=0.0,
        help="start the replayed users a step adds over this many seconds, not at once; the "
        "step's warm-up lasts at least as long",
    )
    bench_run.add_argument(
        "--metrics-urls",
        metavar="URL1,URL2,...",
        default="",
        help="read the engine's metrics from these replicas (behind a router) and sum them; "
        "each replica's prefix-cache hit ratio is listed too (default: the backend URL)",
    )
    bench_run.add_argument(
        "--compare",
        metavar="URL1,URL2,...",
        help="replay the --replay traces on each of these backends in turn, step by step, "
        "and put them side by side (no editors)",
    )
    bench_plot = bench_commands.add_parser("plot", help="PNG plots of a results.json")
    bench_plot.add_argument("results", type=Path, help="a results.json of `headstart bench run`")
    add_aiapi_parser(commands)

    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve_lsp(args.tcp)
    if args.command == "index":
        return index_folder(args.path, args.cache_dir)
    if args.command == "demo":
        from server import demo as demo_module

        return demo_module.main(args.backend_url, args.model)
    if args.command == "doctor":
        return doctor_command(args.settings, as_json=args.json)
    if args.command == "bench":
        return bench_command(args)
    if args.command == "aiapi":
        return run_aiapi(args)
    return backend_command(args)


PRIVATE_UMASK = 0o077
"""What the server and the indexer write (the project cache, logs, request traces) holds
the user's code: readable by the user alone."""


def dump_threads_on_signal() -> None:
    """`kill -USR1 <pid>` writes every thread's Python stack to stderr (the editor's
    server log; never stdout): what a server that stopped answering is waiting for, without
    stopping it. No such signal on Windows."""
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)


def serve_lsp(tcp: str | None) -> int:
    from server.lsp.handlers import server

    os.umask(PRIVATE_UMASK)
    dump_threads_on_signal()
    server.start_logging()
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not port.isdigit():
            print(f"--tcp wants HOST:PORT, got {tcp!r}", file=sys.stderr)
            return 2
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        if sys.stdin.isatty():  # a person, not an editor: say what this is (never on stdout)
            print(
                "headstart serve speaks LSP on stdin/stdout, for an editor to start; "
                "to check the setup, run `headstart doctor` (Ctrl-D ends this)",
                file=sys.stderr,
                flush=True,
            )
        server.start_io()
    # LSP: exit code 0 only if `shutdown` came before `exit`
    return 0 if server.shutdown_requested else 1


def doctor_command(settings_json: str, *, as_json: bool = False) -> int:
    """`headstart doctor`; server.doctor does the work."""
    from server import doctor

    try:
        options = json.loads(settings_json)
    except ValueError as exc:
        print(f"headstart doctor: --settings is not JSON ({exc})", file=sys.stderr)
        return 2
    if not isinstance(options, dict):
        print("headstart doctor: --settings wants a JSON object", file=sys.stderr)
        return 2
    return doctor.main(options, as_json=as_json)


def index_folder(root: Path, cache_dir: Path | None) -> int:
    """Cold or warm index of `root`, with a progress bar and a summary (on stderr/stdout)."""
    from cache.index import ProjectIndex

    os.umask(PRIVATE_UMASK)

    if not root.is_dir():
        print(f"{root} is not a folder", file=sys.stderr)
        return 2

    def bar(done: int, total: int) -> None:
        filled = 30 * done // max(total, 1)
        print(
            f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} files",
            end="",
            file=sys.stderr,
            flush=True,
        )

    index = ProjectIndex(root, cache_dir=cache_dir)
    try:
        summary = index.build(progress=bar)
    finally:
        index.close()
    print(file=sys.stderr)
    top = ", ".join(f"{lang} {n}" for lang, n in summary.languages.most_common(8))
    print(
        f"{summary.files} files ({top}); {summary.edges} import edges; "
        f"{summary.outlined} new or changed, {summary.rehashed} re-hashed, "
        f"{summary.reused} unchanged, "
        f"{summary.removed} removed; {summary.seconds:.2f} s; "
        f"store {summary.store_bytes / 1e6:.1f} MB at {index.store.path}"
    )
    return 0


def _url_list(text: str) -> list[str]:
    """`URL1,URL2,...` as a list, blanks and trailing slashes dropped."""
    return [url.strip().rstrip("/") for url in text.split(",") if url.strip()]


def bench_command(args: argparse.Namespace) -> int:
    """`headstart bench run|plot`; server.bench.run and server.bench.plots do the work."""
    from server.bench import run as bench

    if args.bench_command == "plot":
        return bench_plot(args.results)
    if args.compare:
        return bench_compare(args)
    try:
        settings = json.loads(args.settings)
        users = [int(n) for n in args.users.split(",")]
        replay_users = [int(n) for n in args.replay_users.split(",") if n.strip()]
    except ValueError as exc:
        print(f"headstart bench run: bad --settings or --users ({exc})", file=sys.stderr)
        return 2
    least = 0 if args.replay else 1
    if not isinstance(settings, dict) or not users or min(users) < least:
        print(
            f"headstart bench run: --settings wants a JSON object, --users ≥ {least}",
            file=sys.stderr,
        )
        return 2
    if bool(args.replay) != bool(replay_users) or min(replay_users, default=1) < 1:
        print("headstart bench run: --replay and --replay-users (≥ 1) go together", file=sys.stderr)
        return 2
    if args.profile == "developer" and (args.speed != 1.0 or args.lines_per_visit):
        print(
            "headstart bench run: --speed and --lines-per-visit are the typist's; the "
            "developer profile's numbers are fixed (server/bench/profiles.py)",
            file=sys.stderr,
        )
        return 2
    from server.config import SettingsError, load_settings

    try:
        url = args.backend_url or load_settings(settings).backend.url
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    root = args.workspace or Path(__file__).resolve().parent.parent / "examples/sample_project"
    options = bench.BenchOptions(
        root=root.resolve(),
        backend_url=url,
        out=args.out,
        users=users,
        step_s=args.step_seconds,
        warmup_s=args.warmup_seconds,
        settings=settings,
        seed=args.seed,
        speed=args.speed,
        lines_per_visit=args.lines_per_visit,
        profile=args.profile,
        floor_prompts=args.floor_prompts,
        workers=args.workers,
        languages=args.languages.split(",") if args.languages else None,
        progress_bar=sys.stderr.isatty(),
        record=args.record,
        replay=args.replay,
        replay_users=replay_users,
        replay_salt=not args.no_replay_salt,
        replay_drivers=args.replay_drivers,
        replay_ramp_s=max(0.0, args.replay_ramp_seconds),
        metrics_urls=_url_list(args.metrics_urls),
    )
    try:
        results = bench.run(options)
    except bench.BenchError as exc:
        print(f"headstart bench run: {exc}", file=sys.stderr)
        return 1
    print(bench.report(results))
    print(f"results: {args.out / 'results.json'}")
    return 0


def bench_compare(args: argparse.Namespace) -> int:
    """`headstart bench run --compare URL1,URL2 --replay DIR --replay-users N,...`."""
    from server.bench import compare

    backends = _url_list(args.compare)
    try:
        replay_users = [int(n) for n in args.replay_users.split(",") if n.strip()]
    except ValueError as exc:
        print(f"headstart bench run: bad --replay-users ({exc})", file=sys.stderr)
        return 2
    if len(set(backends)) < 2 or not args.replay or not replay_users or min(replay_users) < 1:
        print(
            "headstart bench run: --compare wants two or more backend URLs, with --replay DIR "
            "and --replay-users (≥ 1)",
            file=sys.stderr,
        )
        return 2
    options = compare.CompareOptions(
        backends=backends,
        replay=args.replay,
        replay_users=replay_users,
        out=args.out,
        step_s=args.step_seconds,
        warmup_s=args.warmup_seconds,
        replay_salt=not args.no_replay_salt,
        replay_drivers=args.replay_drivers,
        replay_ramp_s=max(0.0, args.replay_ramp_seconds),
        progress_bar=sys.stderr.isatty(),
    )
    from server.bench.run import BenchError

    try:
        results = compare.run(options)
    except BenchError as exc:
        print(f"headstart bench run: {exc}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(compare.report(results))
    print(f"results: {args.out / 'results.json'}")
    return 0


def bench_plot(path: Path) -> int:
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"headstart bench plot: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("headstart bench plot needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 1
    from server.bench.plots import plot

    for written in plot(results, path.parent):
        print(f"wrote {written}")
    return 0


def backend_command(args: argparse.Namespace) -> int:
    """`headstart backend start|stop|status`; server.backend.process does the work."""
    from server.config import SettingsError, load_settings

    local = {
        "model": getattr(args, "model", None),
        "servedModelName": getattr(args, "served_model_name", None),
        "port": getattr(args, "port", None),
        "gpuMemoryUtilization": getattr(args, "gpu_memory_utilization", None),
        "maxModelLen": getattr(args, "max_model_len", None),
        "startupTimeoutS": args.timeout if args.backend_command == "start" else None,
        "extraArgs": [a for a in getattr(args, "vllm_args", None) or [] if a != "--"] or None,
        "replicas": getattr(args, "replicas", None),
        "engine": getattr(args, "engine", None),
    }
    options = {"backend": {"local": {k: v for k, v in local.items() if v is not None}}}
    try:
        # the options win over the HEADSTART_* variables here: they were typed just now
        settings = load_settings(options)
        settings = load_settings(settings.model_dump(by_alias=True), options, environ={})
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.backend_command == "start":
        return backend_start(settings)
    if args.backend_command == "stop":
        return backend_stop(args.timeout)
    return backend_status(settings, as_json=args.json)


def backend_start(settings: Settings) -> int:
    from server.backend import process as bp
    from server.backend.launch_plan import BackendStartError, LaunchSpec

    spec = LaunchSpec.from_settings(settings)
    interactive = sys.stderr.isatty()

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        claim = bp.claim_backend(spec, progress=say, started_by="headstart backend start")
        state = claim.state
        if not claim.started_here:
            ago = _duration(time.time() - state.started_at)
            say(f"already running: pid {state.pid}, started {ago} ago by {state.started_by}")
        for note in claim.notes:
            say(f"note: {note}")
        try:
            remaining = spec.startup_timeout_s - (time.time() - state.started_at)
            bp.wait_until_ready(
                claim, max(remaining, 5.0), progress=say, report_every_s=5 if interactive else 15
            )
        except KeyboardInterrupt:
            if claim.started_here:
                bp.stop_backend()
                say(f"interrupted: stopped the vLLM it was starting (pid {state.pid})")
            return 130
    except BackendStartError as exc:
        print(f"headstart backend start: {exc}", file=sys.stderr)
        return 1
    print(f"ready: {state.url} serves {state.model} (pid {state.pid}, {state.description})")
    print(
        'Editors share it with the setting {"backend": {"mode": "local"}}; '
        "`headstart backend stop` stops it."
    )
    return 0


def backend_stop(timeout_s: float) -> int:
    from server.backend import process as bp

    stopped = bp.stop_backend(timeout_s)
    if stopped.state is None:
        print("no local vLLM is running")
    elif not stopped.was_running:
        print(f"no local vLLM is running (removed the record of pid {stopped.state.pid}, gone)")
    else:
        how = "SIGKILL: it ignored SIGTERM" if stopped.killed else "SIGTERM"
        print(f"stopped the local vLLM at {stopped.state.url} (pid {stopped.state.pid}, {how})")
    return 0


def backend_status(settings: Settings, *, as_json: bool = False) -> int:
    """What runs locally, and whether the backend the settings point at answers.

    Exit code 0 when that backend answers (the local vLLM with backend.mode 'local', the
    configured URL otherwise), 1 when it does not."""
    from server.backend import process as bp
    from server.backend.local_vllm import served_models

    status = bp.backend_status()
    remote_models = (
        served_models(settings.backend.url) if settings.backend.mode == "remote" else None
    )
    answering = status.ready if settings.backend.mode == "local" else remote_models is not None
    if as_json:
        report: dict[str, Any] = {
            "mode": settings.backend.mode,
            "answering": answering,
            "local": None if status.state is None else asdict(status.state),
            "localReady": status.ready,
            "localModels": status.health.models if status.health else None,
            "staleRemoved": None if status.stale is None else asdict(status.stale),
        }
        if settings.backend.mode == "remote":
            report["url"] = settings.backend.url
            report["models"] = remote_models
        print(json.dumps(report, indent=2))
        return 0 if answering else 1

    if status.stale is not None:
        print(f"removed the record of a local vLLM that is gone (pid {status.stale.pid})")
    if status.state is None:
        print("local vLLM: not running (`headstart backend start` starts it)")
    else:
        print(_describe_local(status))
    if settings.backend.mode == "remote":
        url = settings.backend.url
        if remote_models is None:
            print(f"configured backend {url}: not answering (backend.url, HEADSTART_BACKEND_URL)")
        else:
            print(f"configured backend {url}: serving {', '.join(remote_models) or 'no models'}")
    else:
        print("configured backend: the local vLLM (backend.mode local)")
    return 0 if answering else 1


def _describe_local(status: BackendStatus) -> str:
    state = status.state
    assert state is not None
    up = _duration(time.time() - state.started_at)
    if status.ready and status.health is not None and status.health.models is not None:
        models = ", ".join(status.health.models)
        head = f"local vLLM: ready at {state.url}, serving {models} (up {up})"
    else:
        head = (
            f"local vLLM: not answering yet at {state.url} ({up} since its start: loading, "
            "or stuck; see its log)"
        )
    weights = ", random weights" if state.dummy_weights else ""
    return "\n".join(
        [
            head,
            f"  pid {state.pid} ({state.description})",
            f"  model {state.model_path}{weights}; context {state.max_model_len} tokens",
            f"  started by {state.started_by}; log {state.log_path}",
            f"  command {' '.join(state.command)}",
            *_describe_replicas(status),
        ]
    )


def _describe_replicas(status: BackendStatus) -> list[str]:
    """A line per replica behind the router: where it listens, whether it answers."""
    assert status.state is not None
    lines = []
    for index, (worker, health) in enumerate(
        zip(status.state.workers, status.workers, strict=True), 1
    ):
        answer = "answering" if health.healthy else "not answering"
        lines.append(
            f"  replica {index}: {worker.url}, pid {worker.pid}, {answer}; log {worker.log_path}"
        )
    return lines


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


if __name__ == "__main__":
    sys.exit(main())
