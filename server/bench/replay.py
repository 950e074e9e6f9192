"""Many users from a few recorded ones: `headstart bench run --replay TRACES`.

A simulated editor costs the bench machine a whole `headstart serve` (tens of MB, a
share of a core), so a few hundred of them measure the bench machine, not the backend.
A replayed user costs a few coroutines: it sends the requests a real simulated editor's
server sent (`log.requestTrace`, recorded by `headstart bench run --record`) with their
recorded timing, and ends each one as the server did:

- a request the server's task cancelled (a newer keystroke) is closed at the same time
  after sending, answered or not;
- a request the server stopped reading (it had its line) is closed after as many chunks;
- the rest are read to their end, unless the user's next keystroke request comes while
  it still has no first token: then it is closed, as the user's server would close it.

A keystroke request recorded as typing on the one before it (`typesOn`) that comes while
that one is still running waits for it, up to the server's join wait, before it is sent,
instead of closing it: its server would join the running request
(`completion.joinInFlight`), and under a load heavier than the recording's more keys find
one running. A key that comes while one is waiting so drops it unsent, as a newer key
supersedes a join. The wait counts in that keystroke's time to first token.

Each replayed user also pauses its background work as its server would
(`completion.backgroundThrottleMs`, `server.completion.throttle`): while the median of its
last keystroke requests' first tokens is over the budget, it skips recorded prefetches and
closes a keystroke request where its line was shown (the trace's `lineChunks`) instead of
reading on for the block. Without that, a trace recorded at a light load would keep
sending the speculative requests a loaded server stops.

Replayed user `u` plays trace `u mod n` from a phase of its own (copies of one trace are
spread over its length by the golden ratio), looping it. A loop is the recorded user's whole
span (`RECORDING_FILE`, written by `--record`: from its editor's start to the bench's stop),
so the pauses before its first request and after its last stay and a developer who reads
for seconds between edits loads the backend as much as when recorded; a trace folder
without that record loops from its first request to its last, and `LOOP_GAP_S`. By
default it salts its prompts (`cache_salt`) per user and per loop, so that neither two
copies of one trace nor a loop and the one before it (the same prompts again) share vLLM's
prefix cache and the load is not flattered. The body is sent as recorded (text or token
ids, priority), but for the model's name, which is the backend's, and the fields another
engine reads otherwise (TensorRT-LLM: no vLLM extensions, no salt, its own priority scale).

Each request gives one record (`RECORD_FIELDS`); `server.bench.stats.summarize_replay`
reads them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.backend.client import Priority
from server.backend.engines import body_for
from server.backend.trace import read_trace
from server.bench import driver
from server.bench.driver import Driver, Record
from server.bench.sse_post import Connections, ProtocolError, post
from server.completion.request import JOIN_WAIT_S
from server.completion.throttle import BackgroundThrottle
from server.config import CompletionSettings

THROTTLE_MS: float = CompletionSettings.model_fields["background_throttle_ms"].default
"""`completion.backgroundThrottleMs` by default: replayed users throttle as servers do."""
LOOP_GAP_S = 1.0
"""Silence between a trace's last request and its start again, when a replayed user loops
(the least, when the recorded span is known)."""
RECORDING_FILE = "recording.json"
"""Beside the traces: each recorded user's span, `{"users": {"user-0": {"start": s, "end": s}}}`
on the traces' clock (`sent`: seconds since the epoch)."""
GOLDEN = 0.6180339887498949
RECORD_FIELDS = {
    "replayed": "the replayed user",
    "t": "monotonic time the request was sent",
    "priority": "the request's priority (0 when it had none)",
    "recorded": "how the recorded request ended: done, cancelled, closed, error",
    "outcome": "how this one ended: done, cancelled, closed, superseded, error; "
    "throttled: a prefetch not sent while background work was paused",
    "lagMs": "how late it was sent against its schedule (the driver's lag)",
    "paused": "whether its user's background work was paused when it was sent",
    "ttftMs": "ms from sending to the first event (absent when none came)",
    "joinMs": "ms a keystroke request that typed on a running one waited for it, unsent",
    "ms": "ms from sending to the end",
}


class ReplayError(Exception):
    """The traces cannot be replayed (none found, none with requests)."""


@dataclass(frozen=True)
class TracedRequest:
    at_s: float
    """Seconds after the recorded user's start (without a record of it, after the trace's
    first request)."""
    body: dict[str, Any]
    end: str
    end_ms: float
    chunks: int
    line_chunks: int | None = None
    """Where the server showed the request's line and read on for the block (`lineChunks`)."""
    types_on: bool = False
    """A keystroke's request typed on at the previous request's cursor (`typesOn`)."""
    fields_json: bytes = b"{}"
    """The body but its model, encoded once: each replayed copy only adds its model name
    and salt in front."""

    @property
    def priority(self) -> int:
        return int(self.body.get("priority", 0))


@dataclass(frozen=True)
class Trace:
    name: str
    requests: tuple[TracedRequest, ...]
    recorded_s: float | None = None
    """How long its user was recorded, when the recording says (`RECORDING_FILE`)."""

    @property
    def length_s(self) -> float:
        """One loop: the recorded span, or else from the first request to the last; and at
        least a pause after the last."""
        return max(self.recorded_s or 0.0, self.requests[-1].at_s + LOOP_GAP_S)


def load_traces(path: Path, engine: str = "vllm") -> list[Trace]:
    """The traces of a folder (one `*.jsonl` per recorded user), or one trace file; the
    bodies as `engine` takes them (`server.backend.engines.body_for`)."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    spans = read_spans(path if path.is_dir() else path.parent)
    traces = []
    for file in files:
        try:
            lines = read_trace(file)
        except (OSError, UnicodeDecodeError) as exc:
            raise ReplayError(f"cannot read the trace {file}: {exc}") from None
        if not lines:
            continue
        start = float(lines[0]["sent"])
        recorded_s = None
        if file.stem in spans:
            span_start, span_end = spans[file.stem]
            start = min(start, span_start)
            recorded_s = span_end - start
        requests = tuple(
            TracedRequest(
                at_s=float(line["sent"]) - start,
                body=dict(line["body"]),
                end=str(line.get("end", "done")),
                end_ms=float(line.get("endMs", 0.0)),
                chunks=int(line.get("chunks", 0)),
                line_chunks=int(line["lineChunks"]) if "lineChunks" in line else None,
                types_on=bool(line.get("typesOn", False)),
                fields_json=_fields_json(body_for(engine, line["body"])),
            )
            for line in lines
        )
        traces.append(Trace(file.stem, requests, recorded_s))
    if not traces:
        raise ReplayError(f"no recorded requests under {path} (record some with --record)")
    return traces


def read_spans(folder: Path) -> dict[str, tuple[float, float]]:
    """(start, end) of each recorded user by its trace's name; none for a folder recorded
    before `RECORDING_FILE` was written."""
    file = folder / RECORDING_FILE
    if not file.exists():
        return {}
    try:
        users = json.loads(file.read_text(encoding="utf-8"))["users"]
        return {name: (float(s["start"]), float(s["end"])) for name, s in users.items()}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReplayError(f"cannot read the recorded spans {file}: {exc!r}") from None


def write_spans(folder: Path, spans: dict[str, tuple[float, float]]) -> None:
    """Add the recorded users' spans (seconds since the epoch, the traces' clock) to
    `RECORDING_FILE`, keeping those of users this recording did not trace."""
    try:
        known = read_spans(folder)
    except ReplayError:
        known = {}
    known.update(spans)
    users = {name: {"start": round(a, 6), "end": round(b, 6)} for name, (a, b) in known.items()}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RECORDING_FILE).write_text(json.dumps({"users": users}, indent=1) + "\n")


def _fields_json(body: dict[str, Any]) -> bytes:
    fields = {key: value for key, value in body.items() if key not in ("model", "cache_salt")}
    return json.dumps(fields).encode()


def phase_s(user: int, traces: list[Trace]) -> float:
    """Where in its trace replayed user `user` starts: copy c of a trace at c times the golden
    ratio of its length (mod 1), so any number of copies spread evenly."""
    trace = traces[user % len(traces)]
    copy = user // len(traces)
    return (copy * GOLDEN) % 1.0 * trace.length_s


def schedule(trace: Trace, phase: float) -> Iterator[tuple[float, int, TracedRequest]]:
    """(seconds from the start, loop, request), the trace shifted by `phase` and looped.
    A loop begins where the trace does: a request before the phase comes after the wrap."""
    length = trace.length_s
    shifted = sorted(
        (((request.at_s - phase) % length, index) for index, request in enumerate(trace.requests))
    )
    for turn in itertools.count():
        for at, index in shifted:
            request = trace.requests[index]
            yield turn * length + at, turn + (request.at_s < phase), request


class ReplayedUser:
    def __init__(
        self,
        user: int,
        traces: list[Trace],
        connections: Connections,
        model: str,
        salt: bool,
        emit: Callable[[Record], None],
        throttle_ms: float = THROTTLE_MS,
        delay_s: float = 0.0,
    ) -> None:
        self.user = user
        self.delay_s = delay_s
        """When it starts, after being added (`RunOptions.replay_ramp_s`)."""
        self.trace = traces[user % len(traces)]
        self.phase = phase_s(user, traces)
        self.connections = connections
        self.model = model
        self.salt = salt
        self.body_start: tuple[int, bytes] = (-1, b"")
        """(loop, the start of each body sent in it)."""
        self.emit = emit
        self.unanswered: dict[asyncio.Task[None], Record] = {}
        """Keystroke requests in flight with no first token yet."""
        self.throttle = BackgroundThrottle(throttle_ms)
        """Its server's background throttle, fed the keystroke requests' first tokens."""
        self.running: asyncio.Task[None] | None = None
        """The latest keystroke request sent, while it is in flight: the one to join."""
        self.joining: dict[asyncio.Task[None], Record] = {}
        """Keystroke requests waiting, unsent, for the running one to end."""

    async def run(self, stop: asyncio.Event) -> None:
        """Send the schedule's requests on time until `stop`; then end those in flight."""
        started = time.monotonic() + self.delay_s
        in_flight: set[asyncio.Task[None]] = set()
        for at, loop, request in schedule(self.trace, self.phase):
            due = started + at
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, due - time.monotonic()))
                break
            except TimeoutError:
                pass
            record: Record = {"replayed": self.user, "priority": request.priority}
            if self.throttle.paused and request.priority >= Priority.PREFETCH:
                self.emit({**record, "t": time.monotonic(), "outcome": "throttled"})
                continue
            join = None
            if request.priority == 0:
                self._drop_joining()
                running = self.running
                join = running if request.types_on and running and not running.done() else None
                if join is None:
                    self._supersede()
            record["paused"] = self.throttle.paused
            start = self.start_of_body(loop)
            task = asyncio.create_task(self.send(request, start, due, record, join))
            if request.priority == 0:
                self.unanswered[task] = record
                task.add_done_callback(lambda done: self.unanswered.pop(done, None))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        for task in list(in_flight):
            task.cancel()
        await asyncio.gather(*in_flight, return_exceptions=True)

    def start_of_body(self, loop: int) -> bytes:
        """`{"model": …, "cache_salt": …`: salted per user and per loop, so that neither
        another copy of the trace nor this user's previous loop (the same prompts again,
        which no one typing sends) finds its prompts in the prefix cache."""
        if self.body_start[0] != loop:
            own = {"model": self.model}
            if self.salt:
                own["cache_salt"] = f"headstart-replay-{self.user}-{loop}"
            self.body_start = (loop, json.dumps(own).encode()[:-1])
        return self.body_start[1]

    def _supersede(self, keep: asyncio.Task[None] | None = None) -> None:
        """A new keystroke (`keep`, if it is one of them) closes the older ones still
        waiting for their first token, as the user's server would: without it an
        overloaded backend would pile up requests that no one waits for any more (in the
        recording they were answered in time)."""
        for task, record in list(self.unanswered.items()):
            if task is not keep:
                record["superseded"] = True
                task.cancel()
                del self.unanswered[task]

    def _drop_joining(self) -> None:
        """A new keystroke drops the ones still waiting to join: their server would have
        answered this key instead."""
        for task, record in self.joining.items():
            record["superseded"] = True
            task.cancel()
        self.joining.clear()

    async def send(
        self,
        request: TracedRequest,
        start: bytes,
        due: float,
        record: Record,
        join: asyncio.Task[None] | None = None,
    ) -> None:
        fields = request.fields_json
        body = start + (b", " + fields[1:] if fields != b"{}" else b"}")
        sent = time.monotonic()
        record.update(t=sent, recorded=request.end, lagMs=(sent - due) * 1000)
        try:
            if join is not None:
                await self._join(join, record)
                sent = time.monotonic()
            if request.priority == 0:
                self.running = asyncio.current_task()
            record["outcome"] = await self._stream(body, request, sent, record)
        except asyncio.CancelledError:
            if not record.pop("superseded", False):
                raise  # the run is stopping
            record["outcome"] = "superseded"
        record["ms"] = (time.monotonic() - sent) * 1000
        self.emit(record)

    async def _join(self, running: asyncio.Task[None], record: Record) -> None:
        """Wait, unsent, for the running keystroke request to end, as a server that joins
        it would; past the join wait its server sends its own request, closing that one."""
        task: asyncio.Task[None] = asyncio.current_task()  # type: ignore[assignment]
        self.joining[task] = record
        started = time.monotonic()
        try:
            await asyncio.wait({running}, timeout=JOIN_WAIT_S)
        finally:
            self.joining.pop(task, None)
        record["joinMs"] = (time.monotonic() - started) * 1000
        if not running.done():
            self._supersede(keep=task)

    async def _stream(
        self, body: bytes, request: TracedRequest, sent: float, record: Record
    ) -> str:
        """POST and read as the recorded request was read; how it ended. A stream ended
        early closes its connection, which is how the backend learns to abort it."""
        close_after_s = request.end_ms / 1000 if request.end == "cancelled" else None
        close_after_events = request.chunks if request.end == "closed" else None
        if record["paused"] and request.end == "done" and request.line_chunks is not None:
            close_after_events = request.line_chunks  # its server would not read on
        events = 0
        connection = None
        reusable = False
        try:
            async with asyncio.timeout(close_after_s):
                connection = await self.connections.open()
                reply = await post(self.connections, connection, "/completions", body)
                if reply.status != 200:
                    record["status"] = reply.status
                    await reply.drain()
                    reusable = reply.keep_alive
                    return "error"
                async for data in reply.data():
                    if data == b"[DONE]":
                        continue
                    events += 1
                    if events == 1:
                        record["ttftMs"] = (time.monotonic() - sent) * 1000
                        self.unanswered.pop(asyncio.current_task(), None)  # type: ignore[arg-type]
                        if request.priority == 0:
                            self.throttle.observe(record["ttftMs"])
                    if close_after_events is not None and events >= max(close_after_events, 1):
                        return "closed"
                reusable = reply.complete and reply.keep_alive
                return "done"
        except TimeoutError:
            return "cancelled"
        except (OSError, EOFError, ValueError, ProtocolError) as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"[:200]
            return "error"
        finally:
            if connection is not None:
                self.connections.release(connection, reusable)


class ReplayDriver(Driver):
    """A driver process of replayed users: `{"add": [{"user": 7, "delayS": 0.5}, ...]}`."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        engine = str(config.get("engine", "vllm"))
        self.traces = load_traces(Path(config["traces"]), engine)
        self.model = str(config["model"])
        self.salt = bool(config.get("salt", True)) and engine != "trtllm"  # no cache_salt
        self.throttle_ms = float(config.get("backgroundThrottleMs", THROTTLE_MS))
        logging.getLogger("server.completion.throttle").setLevel(logging.ERROR)  # one per user
        self.connections = Connections(str(config["backendUrl"]))
        _allow_open_files()

    def add(self, user: dict[str, Any]) -> None:
        number = int(user["user"])
        replayed = ReplayedUser(
            number,
            self.traces,
            self.connections,
            self.model,
            self.salt,
            self.emit,
            self.throttle_ms,
            float(user.get("delayS", 0.0)),
        )
        self.start(number, replayed.run(self.stop))

    async def close(self) -> None:
        self.connections.close()


def _allow_open_files() -> None:
    """Raise the soft limit on open files to the hard one: each stream in flight holds a
    socket, and an overloaded backend holds hundreds."""
    try:
        import resource
    except ImportError:  # not on Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


if __name__ == "__main__":
    sys.exit(driver.main(ReplayDriver, sys.argv[1:]))
