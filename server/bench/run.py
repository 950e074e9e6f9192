"""`headstart bench run`: keystroke-to-suggestion under load, as editors see it.

Simulated users (`server.bench.user`) type real lines of a workspace's files, each through
its own `headstart serve` over LSP, all against one backend. Load goes up in steps (e.g. 1,
10, 50 users): users added at a step keep typing through the later ones. Each step is
measured over a window after its users are up: keystroke-to-suggestion p50/p99/p999, the
server's stages, the completion cache's hit ratio, and from vLLM's /metrics the
prefix-cache hit ratio, throughput and its own time to first token. Behind a router, which
has no vLLM metrics of its own, `--metrics-urls` reads the replicas' instead: the step's
figures are those of their sum, and each replica's prefix-cache hit ratio is listed.

With `--replay TRACES`, each step also runs replayed users (`server.bench.replay`): the
requests that recorded editors' servers sent (`--record`), sent again with their timing and
cancels from a few light driver processes, so a step can put hundreds of users' load on
the backend while a handful of real editors measure keystroke-to-suggestion under it.

Then the floor (`server.bench.floor`): the requests the first user's server sent in the
first step are sent again straight to the backend, one after another in their order, as
the server sent them, so the server's latency can be read next to the backend's on the
very same requests.

Results go to OUT/results.json; `headstart bench plot` draws OUT/latency_cdf.png and
OUT/stages.png from it (needs matplotlib).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from server.backend.local_vllm import served_models
from server.bench.engine_metrics import NAMES, MetricNames, engine_at
from server.bench.floor import run_floor
from server.bench.profiles import DeveloperProfile
from server.bench.replay import THROTTLE_MS, ReplayError, load_traces, write_spans
from server.bench.stats import (
    cdf,
    keystroke_latencies,
    no_metrics,
    parse_metrics,
    replica_figures,
    step_metrics,
    sum_metrics,
    summarize,
    summarize_replay,
)
from server.bench.typing_sessions import TypingSpeed, lines_worth_typing
from server.metrics import percentile

Record = dict[str, Any]
USERS_PER_WORKER = 50
REPLAYED_PER_DRIVER = 200
SERVER_MEMORY_MB = 200
"""Memory allowed for one `headstart serve` when checking that a step fits: ~80 MB was
measured on the sample project, more with the model's tokenizer loaded."""


class BenchError(Exception):
    """The bench cannot run as asked (backend unreachable, nothing to type...)."""


@dataclass
class BenchOptions:
    root: Path
    backend_url: str
    out: Path
    users: list[int] = field(default_factory=lambda: [1, 10, 50])
    step_s: float = 60.0
    warmup_s: float = 10.0
    settings: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    speed: float = 1.0
    lines_per_visit: int = 0
    """Lines each user types in a file before going to another (`TypingSession`); 0: a
    run of 1-4 lines, then anywhere in the workspace."""
    profile: str = "typist"
    """"typist": type without pause (the stress figure); "developer": the published
    activity profile (`server.bench.profiles.DeveloperProfile`; speed and lines per visit
    do not apply to it)."""
    floor_prompts: int = 200
    workers: int | None = None
    languages: list[str] | None = None
    start_timeout_s: float = 600.0
    progress_bar: bool = True
    """Redraw a progress line on stderr (a terminal); else one line per step."""
    record: Path | None = None
    """Trace every editor's backend requests to RECORD/user-N.jsonl (`log.requestTrace`),
    and each editor's span to RECORD/recording.json (`server.bench.replay.RECORDING_FILE`)."""
    replay: Path | None = None
    """Traces to replay; `replay_users` replayed users per step run beside the editors."""
    replay_users: list[int] = field(default_factory=list)
    replay_salt: bool = True
    """Give each replayed user, and each loop of its trace, its own prefix cache (vLLM's
    `cache_salt`)."""
    replay_drivers: int | None = None
    replay_ramp_s: float = 0.0
    """Spread the starts of the replayed users a step adds over this many seconds (the
    i-th of n at i/n of it), so that their first prompts, none of them cached yet, do not
    reach the engine together; the step's warm-up lasts at least as long. Without it, 500
    replayed developers started at once queued vLLM for seconds (docs/bench.md)."""
    metrics_urls: list[str] = field(default_factory=list)
    """The engines whose /metrics are read and summed (the replicas behind a router);
    none: the backend's."""

    def steps(self) -> list[tuple[int, int]]:
        """(editors, replayed users) of each step: with replay, one step per replay count,
        the editors given once for all steps or once per step."""
        if not self.replay_users:
            return [(users, 0) for users in self.users]
        if len(self.users) == 1:
            return [(self.users[0], replayed) for replayed in self.replay_users]
        if len(self.users) != len(self.replay_users):
            raise BenchError("--users gives one count, or one per --replay-users step")
        return list(zip(self.users, self.replay_users, strict=True))


@dataclass
class Step:
    users: int
    replayed: int = 0
    started: float = 0.0
    ended: float = 0.0
    metrics_before: list[dict[str, Any]] = field(default_factory=list)
    """One read of /metrics per metrics URL, at the step's start; `metrics_after` at its end."""
    metrics_after: list[dict[str, Any]] = field(default_factory=list)
    load_average: float = 0.0
    skipped: str | None = None


class WorkerProcess:
    """One driver process (`server.bench.worker` or `.replay`), and the records it sends."""

    def __init__(self, process: asyncio.subprocess.Process, sink: Bench) -> None:
        self.process = process
        self.users = 0
        self.cpu: list[tuple[float, float]] = []
        """(monotonic time, the process's CPU seconds so far), every 100 ms."""
        self.up = asyncio.Event()
        """Set at its first report: its event loop runs, so users added now start at once
        (importing a driver can take seconds on a loaded machine)."""
        self.reader = asyncio.create_task(self._read(sink))

    async def _read(self, sink: Bench) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if "cpu" in event:
                    self.cpu.append((event["t"], event["cpu"]))
                    self.up.set()
                sink.receive(event)

    def cores(self, start: float, end: float) -> float | None:
        """The share of a core the process used between `start` and `end`."""
        inside = [(t, cpu) for t, cpu in self.cpu if start <= t <= end]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
            return None
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(command) + "\n").encode())


class Bench:
    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.records: list[Record] = []
        self.lags: list[tuple[float, float]] = []
        self.ready_at: dict[int, float] = {}
        """The editors started, each with the monotonic time it started typing (where its
        recorded span begins)."""
        self.failures: list[str] = []
        self.warnings: list[str] = []
        self.workers: list[WorkerProcess] = []
        self.users = 0
        self.replay_records: list[Record] = []
        self.replay_drivers: list[WorkerProcess] = []
        self.replayed = 0
        self.model = ""
        self.engine = "vllm"
        self.metrics_urls = options.metrics_urls or [options.backend_url]

    def receive(self, event: Record) -> None:
        if "lag" in event:
            self.lags.append((event["t"], event["lag"]))
        elif "ready" in event:
            self.ready_at[event["user"]] = float(event["ready"])
        elif "failed" in event:
            self.failures.append(f"user {event['user']}: {event['failed']}")
        elif "warning" in event:
            self.warnings.append(f"user {event['user']}: {event['warning']}")
        elif "replayed" in event:
            self.replay_records.append(event)
        else:
            self.records.append(event)

    async def run(self) -> dict[str, Any]:
        options = self.options
        models = served_models(options.backend_url, timeout_s=10)
        if models is None:
            raise BenchError(
                f"the backend at {options.backend_url} does not answer GET /models; start "
                "one (`headstart backend start`) or pass --backend-url"
            )
        self.model = options.settings.get("backend", {}).get("model") or (models or ["?"])[0]
        self.engine = await asyncio.to_thread(engine_at, options.backend_url)
        plan = options.steps()
        lines = []
        cache_dir = Path(tempfile.mkdtemp(prefix="headstart-bench-cache-"))
        if max(u for u, _ in plan) > 0:  # editors type the workspace; replayed users do not
            lines = lines_worth_typing(options.root, _languages(options))
            if not lines:
                raise BenchError(f"no source lines worth typing under {options.root}")
            await asyncio.to_thread(_index, options.root, cache_dir)
        config = self._worker_config(cache_dir)
        config_path = cache_dir / "worker_config.json"  # holds the environment: not in OUT
        config_path.write_text(json.dumps(config))
        server_env: dict[str, str] = config["serverEnv"]
        steps: list[Step] = []
        started = time.time()
        try:
            await self._start_workers(config_path, server_env, max(u for u, _ in plan))
            await self._start_replay(cache_dir, server_env, max(r for _, r in plan))
            for number, (users, replayed) in enumerate(plan, 1):
                step = Step(users, replayed)
                steps.append(step)
                step.skipped = _memory_shortfall(users - self.users, self.users)
                if step.skipped is None:
                    await self._run_step(step, number)
                else:
                    self._progress(f"step {number}: {step.skipped}", end=True)
        finally:
            stopped = time.monotonic()
            await self._stop_workers()
            self._write_spans(stopped)
        floor = await self._floor(steps)
        shutil.rmtree(cache_dir, ignore_errors=True)
        return self._results(steps, floor, started, len(lines))

    def _write_spans(self, stopped: float) -> None:
        """With `--record`, each editor's span beside its trace, from its start to the stop,
        so that replay keeps the silence before its first request and after its last."""
        if self.options.record is None:
            return
        to_wall = time.time() - time.monotonic()  # the traces' clock (`sent`)
        spans = {
            f"user-{user}": (ready + to_wall, stopped + to_wall)
            for user, ready in self.ready_at.items()
        }
        try:
            write_spans(self.options.record.resolve(), spans)
        except OSError as exc:
            self.warnings.append(f"cannot write the recorded spans: {exc}")

    def _worker_config(self, cache_dir: Path) -> dict[str, Any]:
        options = self.options
        settings = copy.deepcopy(options.settings)
        settings.setdefault("backend", {}).setdefault("url", options.backend_url)
        here = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
        return {
            "root": str(options.root),
            "settings": settings,
            "serverEnv": {**os.environ, "PYTHONPATH": path, "HEADSTART_CACHE_DIR": str(cache_dir)},
            "speed": dataclasses.asdict(TypingSpeed().scaled(options.speed)),
            "languages": sorted(options.languages) if options.languages else None,
            "seed": options.seed,
            "linesPerVisit": options.lines_per_visit,
            "profile": options.profile,
        }

    async def _start_workers(self, config_path: Path, env: dict[str, str], most: int) -> None:
        count = self.options.workers or _processes(most, USERS_PER_WORKER)
        for _ in range(count):
            self.workers.append(await self._spawn("server.bench.worker", config_path, env))

    async def _start_replay(self, cache_dir: Path, env: dict[str, str], most: int) -> None:
        options = self.options
        if options.replay is None or most <= 0:
            return
        try:
            load_traces(options.replay)  # a clear error now rather than one per driver
        except ReplayError as exc:
            raise BenchError(str(exc)) from None
        config_path = cache_dir / "replay_config.json"
        config = {
            "traces": str(options.replay.resolve()),
            "backendUrl": options.backend_url,
            "model": self.model,
            "salt": options.replay_salt,
            "engine": self.engine,
            "backgroundThrottleMs": (options.settings.get("completion") or {}).get(
                "backgroundThrottleMs", THROTTLE_MS
            ),
        }
        if options.replay_salt and self.engine == "trtllm":
            self.warnings.append(
                "TensorRT-LLM takes no cache_salt: replayed copies of one trace share its "
                "prefix cache"
            )
        config_path.write_text(json.dumps(config))
        count = options.replay_drivers or _processes(most, REPLAYED_PER_DRIVER)
        for _ in range(count):
            self.replay_drivers.append(await self._spawn("server.bench.replay", config_path, env))

    async def _spawn(self, module: str, config_path: Path, env: dict[str, str]) -> WorkerProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            str(config_path),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            limit=1 << 24,
        )
        return WorkerProcess(process, self)

    async def _stop_workers(self) -> None:
        for worker in [*self.workers, *self.replay_drivers]:
            with contextlib.suppress(ConnectionError):
                worker.send({"stop": True})
        for worker in [*self.workers, *self.replay_drivers]:
            try:
                await asyncio.wait_for(worker.process.wait(), 60)
            except TimeoutError:
                worker.process.kill()
            await worker.reader

    async def _run_step(self, step: Step, number: int) -> None:
        options = self.options
        title = f"step {number}/{len(options.steps())}: {step.users} users"
        if step.replayed:
            title += f" + {step.replayed} replayed"
        while self.users < step.users:
            worker = min(self.workers, key=lambda w: w.users)
            user: dict[str, Any] = {"user": self.users, "requests": self.users == 0}
            if options.record is not None:
                user["trace"] = str(options.record.resolve() / f"user-{self.users}.jsonl")
            worker.send({"add": [user]})
            worker.users += 1
            self.users += 1
        deadline = time.monotonic() + options.start_timeout_s
        while len(self.ready_at) < self.users and time.monotonic() < deadline:
            if self.failures:
                raise BenchError("a simulated editor failed: " + self.failures[0])
            self._progress(f"{title}: starting editors {len(self.ready_at)}/{self.users}")
            await asyncio.sleep(0.5)
        if len(self.ready_at) < self.users:
            raise BenchError(f"{title}: only {len(self.ready_at)} editors started in time")
        self._progress(f"{title}: {self.users} editors up", end=True)
        if step.replayed > self.replayed:
            await self._replay_drivers_up(title)
        added, first = step.replayed - self.replayed, self.replayed
        while self.replayed < step.replayed:
            driver = min(self.replay_drivers, key=lambda d: d.users)
            delay_s = options.replay_ramp_s * (self.replayed - first) / max(1, added)
            driver.send({"add": [{"user": self.replayed, "delayS": delay_s}]})
            driver.users += 1
            self.replayed += 1
        warmup_s = max(options.warmup_s, options.replay_ramp_s if added > 0 else 0.0)
        # the step's clock starts with its users' warm-up, never after their first requests
        started = time.monotonic() + warmup_s
        await asyncio.sleep(warmup_s)
        step.metrics_before = await self._scrape_engines()
        step.started = started
        while (elapsed := time.monotonic() - step.started) < options.step_s:
            recent = self.records[-5000:]
            done = [r["ms"] for r in recent if r.get("t", 0) >= step.started and "ms" in r]
            p50 = f"p50 {percentile(done, 50):.0f} ms" if done else ""
            filled = int(30 * elapsed / options.step_s)
            bar = "#" * filled + "." * (30 - filled)
            self._progress(f"{title} [{bar}] {elapsed:.0f}/{options.step_s:.0f} s  {p50}")
            await asyncio.sleep(min(0.5, options.step_s - elapsed))
        step.ended = time.monotonic()
        step.metrics_after = await self._scrape_engines()
        step.load_average = os.getloadavg()[0]
        done = [r["ms"] for r in self._in_step(step) if "ms" in r]
        p50 = f", p50 {percentile(done, 50):.0f} ms over {len(done)} answers" if done else ""
        self._progress(f"{title}: done{p50}", end=True)

    async def _replay_drivers_up(self, title: str) -> None:
        """Wait until every replay driver runs, so that the users added next start on time
        and a step's clock never runs ahead of them."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(driver.up.wait() for driver in self.replay_drivers)),
                self.options.start_timeout_s,
            )
        if not all(driver.up.is_set() for driver in self.replay_drivers):
            raise BenchError(f"{title}: the replay drivers did not start in time")

    async def _scrape_engines(self) -> list[dict[str, Any]]:
        """Each metrics URL's /metrics, read at once."""
        names = NAMES[self.engine]
        return list(await asyncio.gather(*(_scrape(url, names) for url in self.metrics_urls)))

    def _engine_figures(
        self, step: Step, seconds: float
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]] | None]:
        """The engine's figures of a step over the sum of the metrics URLs' counters, and
        each replica's own when there are several."""
        reads = list(zip(self.metrics_urls, step.metrics_before, step.metrics_after, strict=True))
        for url, before, after in reads:
            # a backend with no metrics at all is no failure, unless they were asked of it
            asked = bool(self.options.metrics_urls) or before["counters"] or after["counters"]
            if asked and (not before["counters"] or not after["counters"]):
                self.warnings.append(
                    f"step of {step.users} users: the engine's metrics at {url} did not answer "
                    "at the step's start or end, so the step's engine figures are left out"
                )
        summed = step_metrics(
            sum_metrics(step.metrics_before), sum_metrics(step.metrics_after), seconds
        )
        if len(reads) < 2:
            return summed, None
        return summed, [replica_figures(*read, seconds) for read in reads]

    def _progress(self, text: str, end: bool = False) -> None:
        if self.options.progress_bar:
            print(f"\r{text:<90}", end="\n" if end else "", file=sys.stderr, flush=True)
        elif end:
            print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    async def _floor(self, steps: list[Step]) -> dict[str, Any] | None:
        """The first user's requests of the first measured step (after its warm-up's),
        straight to the backend (`server.bench.floor`)."""
        measured = [s for s in steps if s.skipped is None]
        if not measured or self.options.floor_prompts <= 0:
            return None
        first = measured[0]
        mine = [r for r in self.records if r.get("user") == 0 and r.get("t", -1.0) < first.ended]
        return await run_floor(
            self.options.backend_url, self.model, mine, first.started, self.options.floor_prompts
        )

    def _in_step(self, step: Step) -> list[Record]:
        return [r for r in self.records if step.started <= r.get("t", -1.0) < step.ended]

    def _results(
        self, steps: list[Step], floor: dict[str, Any] | None, started: float, lines: int
    ) -> dict[str, Any]:
        options = self.options
        results: list[dict[str, Any]] = []
        for step in steps:
            if step.skipped is not None:
                results.append({"users": step.users, "skipped": step.skipped})
                continue
            seconds = step.ended - step.started
            records = self._in_step(step)
            lags = [ms for t, ms in self.lags if step.started <= t < step.ended]
            replayed = [r for r in self.replay_records if step.started <= r["t"] < step.ended]
            latencies = keystroke_latencies(records)
            vllm, replicas = self._engine_figures(step, seconds)
            results.append(
                {
                    "users": step.users,
                    "replayedUsers": step.replayed,
                    "replay": (
                        {
                            **summarize_replay(replayed, seconds),
                            "driverCores": _cores(self.replay_drivers, step),
                        }
                        if step.replayed
                        else None
                    ),
                    "editorDriverCores": _cores(self.workers, step),
                    "seconds": seconds,
                    "loadAverage": step.load_average,
                    **summarize(records, lags, seconds),
                    "vllm": vllm,
                    "replicas": replicas,
                    "cdfMs": cdf(latencies),
                }
            )
        return {
            "command": "headstart bench run " + " ".join(sys.argv[3:]),
            "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
            "machine": {"cpus": os.cpu_count(), "memoryGB": _memory_gb()},
            "backend": {
                "url": options.backend_url,
                "model": self.model,
                "engine": self.engine,
                "metricsUrls": self.metrics_urls,
            },
            "workspace": {"root": str(options.root), "linesToType": lines},
            "settings": options.settings,
            "typingSpeed": options.speed,
            "linesPerVisit": options.lines_per_visit,
            "profile": options.profile,
            "developerProfile": (
                dataclasses.asdict(DeveloperProfile()) if options.profile == "developer" else None
            ),
            "stepSeconds": options.step_s,
            "workers": len(self.workers),
            "replayDrivers": len(self.replay_drivers),
            "replay": str(options.replay) if options.replay else None,
            "replaySalt": options.replay_salt,
            "replayRampSeconds": options.replay_ramp_s,
            "recorded": str(options.record) if options.record else None,
            "steps": results,
            "floor": floor,
            "failures": self.failures[:20],
            "warnings": sorted(set(self.warnings))[:20],
        }


def _cores(drivers: list[WorkerProcess], step: Step) -> list[float | None]:
    """Each driver process's share of a core during the step."""
    return [driver.cores(step.started, step.ended) for driver in drivers]


def _processes(users: int, per_process: int) -> int:
    """Driver processes for `users`: one per `per_process`, at most half the cores."""
    return min(-(-users // per_process), max(1, (os.cpu_count() or 2) // 2))


def _languages(options: BenchOptions) -> frozenset[str] | None:
    return frozenset(options.languages) if options.languages else None


def _index(root: Path, cache_dir: Path) -> None:
    """Index once, so the users' servers start from a warm store instead of racing."""
    from cache.index import ProjectIndex

    index = ProjectIndex(root, cache_dir=cache_dir)
    try:
        index.build()
    finally:
        index.close()


async def _scrape(url: str, names: MetricNames) -> dict[str, Any]:
    """The engine's Prometheus metrics, parsed by its `names`; empty when it has none."""
    base = url.rstrip("/").removesuffix("/v1")
    try:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            reply = await client.get(f"{base}{names.path}")
            reply.raise_for_status()
            return parse_metrics(reply.text, names)
    except httpx.HTTPError:
        return no_metrics()


def _available_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _memory_gb() -> float | None:
    try:
        total = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
        return round(int(total) / 1024 / 1024, 1)
    except (OSError, IndexError, ValueError):
        return None


def _memory_shortfall(adding: int, running: int) -> str | None:
    """Why a step cannot start `adding` more servers, or None if memory allows it."""
    available = _available_mb()
    if available is None or adding <= 0:
        return None
    needed = adding * SERVER_MEMORY_MB
    if needed > available - 2048:
        return (
            f"skipped: {adding} more editors ({running} running) need ~{needed / 1024:.0f} GB, "
            f"{available / 1024:.0f} GB available"
        )
    return None


def run(options: BenchOptions) -> dict[str, Any]:
    options.out.mkdir(parents=True, exist_ok=True)
    results = asyncio.run(Bench(options).run())
    (options.out / "results.json").write_text(json.dumps(results, indent=1))
    return results


def report(results: dict[str, Any]) -> str:
    """The results as a table of text, one row a step."""
    out = [
        f"headstart bench: {results['backend']['model']} at {results['backend']['url']} "
        f"({results['backend'].get('engine', 'vllm')}); "
        f"{results['machine']['cpus']} CPUs; {results['stepSeconds']:.0f} s a step; "
        f"{results['workers']} driver processes; {results.get('profile', 'typist')} users",
        f"{'users':>5} {'keys/s':>7} {'answered':>8} {'p50':>7} {'p99':>7} {'p999':>7} "
        f"{'model p50':>9} {'p99':>7} {'cache':>6} {'joined':>6} {'prefix':>7} "
        f"{'computed/s':>10} {'POST/s':>6} "
        f"{'gen tok/s':>9} "
        f"{'vLLM TTFT p50':>13} {'ITL p50':>7} {'p99':>6} {'unfin.':>6} {'API ms/req':>10} "
        f"{'lag p99':>8} {'load':>5}",
    ]
    for step in results["steps"]:
        if "skipped" in step:
            out.append(f"{step['users']:>5} {step['skipped']}")
            continue
        k, m, vllm = step["keystrokeToSuggestionMs"], step["modelRequestsMs"], step["vllm"] or {}
        answered = step["outcomes"].get("answered", 0) / max(step["keys"], 1)
        out.append(
            f"{step['users']:>5} {step['keysPerS']:>7.1f} {answered:>8.1%} {_ms(k['p50'])} "
            f"{_ms(k['p99'])} {_ms(k['p999'])} {_ms(m['p50']):>9} {_ms(m['p99'])} "
            f"{_ratio(step['completionCacheHitRatio']):>6} "
            f"{_ratio(step.get('joinedShare')):>6} "
            f"{_ratio(vllm.get('prefixCacheHitRatio')):>7} "
            f"{vllm.get('computedPromptTokensPerS', 0):>10.0f} "
            f"{vllm.get('postsPerS', 0):>6.1f} "
            f"{vllm.get('generationTokensPerS', 0):>9.0f} "
            f"{_ms((vllm.get('ttftMs') or {}).get('p50')):>13} "
            f"{_ms((vllm.get('itlMs') or {}).get('p50')):>7} "
            f"{_ms((vllm.get('itlMs') or {}).get('p99')):>6} "
            f"{_ratio(vllm.get('unfinishedShare')):>6} "
            f"{_ms(vllm.get('apiServerCpuMsPerRequest')):>10} "
            f"{_ms(step['driverLagMs']['p99']):>8} {step['loadAverage']:>5.1f}"
        )
        if step.get("modelRequestsByModeMs"):
            out.append(_modes_row(step["modelRequestsByModeMs"]))
        if step.get("edits"):
            out.append(_developer_row(step))
        if vllm.get("draftAcceptedShare") is not None:
            out.append(
                f"{'':>5} speculative decoding: {vllm['draftAcceptedShare']:.0%} of "
                f"{vllm['counts']['draft_tokens']:.0f} draft tokens accepted"
            )
        if step.get("replicas"):
            out.append(_replicas_row(step["replicas"]))
        if step.get("replay"):
            out.append(_replay_row(step["replayedUsers"], step["replay"]))
    floor = results.get("floor")
    if floor:
        ratio = f"{floor['ratio']:.2f}x" if floor.get("ratio") else "-"
        out.append(
            f"floor: the first user's {floor['prompts']} model requests straight to the "
            f"backend{' (own cache salt)' if floor['salted'] else ''}: first event p50 "
            f"{_ms(floor['ttftMs']['p50'])} p99 {_ms(floor['ttftMs']['p99'])} ms, to the "
            f"server's answer p50 {_ms(floor['answerMs']['p50'])} p99 "
            f"{_ms(floor['answerMs']['p99'])} ms; the same keys at the editor p50 "
            f"{_ms(floor['serverMs']['p50'])} ms, {ratio} the floor's"
        )
    for failure in results.get("failures", []):
        out.append(f"failed: {failure}")
    return "\n".join(out)


def _replay_row(users: int, replay: dict[str, Any]) -> str:
    """A step's replayed load, under its row: the backend's first token for the requests
    keystrokes wait for, and how late the drivers sent them."""
    keystroke, lag = replay["keystrokeTtftMs"], replay["sendLagMs"]
    errors = replay["outcomes"].get("error", 0)
    return (
        f"{'':>5} + {users} replayed users: {replay['requestsPerS']:.1f} requests/s, keystroke "
        f"TTFT p50 {_ms(keystroke['p50']).strip()} p99 {_ms(keystroke['p99']).strip()} ms "
        f"(n={keystroke['n']}), joined {_ratio(replay.get('joinedShare')).strip()}, "
        f"superseded answered {_ratio(replay['supersededAnsweredShare'])}, "
        f"errors {errors}, background paused for {_ratio(replay.get('pausedShare')).strip()} "
        f"of keystrokes ({replay.get('throttled', 0)} prefetches not sent), "
        f"send lag p99 {_ms(lag['p99']).strip()} ms, drivers' cores "
        + ", ".join(f"{cores:.2f}" if cores is not None else "-" for cores in replay["driverCores"])
    )


def _developer_row(step: dict[str, Any]) -> str:
    """A developer step's activity, under its row: what the profile made the users do."""
    shown, accepted = step.get("shown", 0), step.get("accepted", 0)
    return (
        f"{'':>5} developers: {step['edits']} edits ({step['midLineEdits']} inside a line, "
        f"{step['fileChanges']} in a new file), {step['pauses']} pauses of "
        f"{step['pauseSeconds']:.0f} s in all, {accepted} of {shown} shown suggestions taken"
    )


def _modes_row(modes: dict[str, dict[str, Any]]) -> str:
    """Model requests by the suggestion's mode, under the step's row."""
    parts = (
        f"{mode} n={q['n']} p50 {_ms(q['p50']).strip()} p99 {_ms(q['p99']).strip()}"
        for mode, q in modes.items()
    )
    return f"{'':>5} model requests by mode: " + ", ".join(parts) + " ms"


def _replicas_row(replicas: list[dict[str, Any]]) -> str:
    """Each replica's prefix-cache hit ratio and finished requests, under the step's row."""
    ratios = " / ".join(_ratio(r["prefixCacheHitRatio"]) for r in replicas)
    requests = " / ".join("-" if r["requests"] is None else str(r["requests"]) for r in replicas)
    return f"{'':>5} replicas: prefix cache {ratios}, requests {requests}"


def _ms(value: float | None) -> str:
    return f"{value:7.1f}" if value is not None else "      -"


def _ratio(value: float | None) -> str:
    return f"{value:.1%}" if value is not None else "-"
