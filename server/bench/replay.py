"""Many users from a few recorded ones: `headstart bench run --replay TRACES`.

A simulated editor costs the bench machine a whole `headstart serve` (tens of MB, a
share of a core), so a few hundred of them measure the bench machine, not the backend.
A replayed user costs a few coroutines: it sends the requests a real simulated editor's
server sent (`log.requestTrace`, recorded by `headstart bench run --record`) with their
recorded timing, and ends each one as the server did:

- a request the server's task cancelled (a newer keystroke) is closed at the same time
  after sending, answered or not;
- a request the server stopped reading (it had its line) is closed after as many chunks;
- the rest are read to their end.

Replayed user `u` plays trace `u mod n` from a phase of its own (copies of one trace are
spread over its length by the golden ratio), looping it, and by default salts its prompts
(`cache_salt`), so that two copies of one trace never share vLLM's prefix cache and the
load is not flattered. The body is sent as recorded (text or token ids, priority), but for
the model's name, which is the backend's.

Each request gives one record (`RECORD_FIELDS`); `server.bench.stats.summarize_replay`
reads them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from server.backend.trace import read_trace
from server.bench.driver import Driver, Record

LOOP_GAP_S = 1.0
"""Silence between the end of a trace and its start again, when a replayed user loops."""
GOLDEN = 0.6180339887498949
RECORD_FIELDS = {
    "replayed": "the replayed user",
    "t": "monotonic time the request was sent",
    "priority": "the request's priority (0 when it had none)",
    "recorded": "how the recorded request ended: done, cancelled, closed, error",
    "outcome": "how this one ended: done, cancelled, closed, error",
    "lagMs": "how late it was sent against its schedule (the driver's lag)",
    "ttftMs": "ms from sending to the first event (absent when none came)",
    "ms": "ms from sending to the end",
}


class ReplayError(Exception):
    """The traces cannot be replayed (none found, none with requests)."""


@dataclass(frozen=True)
class TracedRequest:
    at_s: float
    """Seconds after the trace's first request."""
    body: dict[str, Any]
    end: str
    end_ms: float
    chunks: int

    @property
    def priority(self) -> int:
        return int(self.body.get("priority", 0))


@dataclass(frozen=True)
class Trace:
    name: str
    requests: tuple[TracedRequest, ...]

    @property
    def length_s(self) -> float:
        """One loop: from the first request to the last, and a pause."""
        return self.requests[-1].at_s + LOOP_GAP_S


def load_traces(path: Path) -> list[Trace]:
    """The traces of a folder (one `*.jsonl` per recorded user), or one trace file."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    traces = []
    for file in files:
        try:
            lines = read_trace(file)
        except (OSError, UnicodeDecodeError) as exc:
            raise ReplayError(f"cannot read the trace {file}: {exc}") from None
        if not lines:
            continue
        start = float(lines[0]["sent"])
        requests = tuple(
            TracedRequest(
                at_s=float(line["sent"]) - start,
                body=dict(line["body"]),
                end=str(line.get("end", "done")),
                end_ms=float(line.get("endMs", 0.0)),
                chunks=int(line.get("chunks", 0)),
            )
            for line in lines
        )
        traces.append(Trace(file.stem, requests))
    if not traces:
        raise ReplayError(f"no recorded requests under {path} (record some with --record)")
    return traces


def phase_s(user: int, traces: list[Trace]) -> float:
    """Where in its trace replayed user `user` starts: copy c of a trace at c times the golden
    ratio of its length (mod 1), so any number of copies spread evenly."""
    trace = traces[user % len(traces)]
    copy = user // len(traces)
    return (copy * GOLDEN) % 1.0 * trace.length_s


def schedule(trace: Trace, phase: float) -> Iterator[tuple[float, TracedRequest]]:
    """(seconds from the start, request), the trace shifted by `phase` and looped."""
    length = trace.length_s
    shifted = sorted(
        (((request.at_s - phase) % length, index) for index, request in enumerate(trace.requests))
    )
    for loop in itertools.count():
        for at, index in shifted:
            yield loop * length + at, trace.requests[index]


class ReplayedUser:
    def __init__(
        self,
        user: int,
        traces: list[Trace],
        client: httpx.AsyncClient,
        model: str,
        salt: bool,
        emit: Callable[[Record], None],
    ) -> None:
        self.user = user
        self.trace = traces[user % len(traces)]
        self.phase = phase_s(user, traces)
        self.client = client
        self.model = model
        self.salt = f"headstart-replay-{user}" if salt else None
        self.emit = emit

    async def run(self, stop: asyncio.Event) -> None:
        """Send the schedule's requests on time until `stop`; then end those in flight."""
        started = time.monotonic()
        in_flight: set[asyncio.Task[None]] = set()
        for at, request in schedule(self.trace, self.phase):
            due = started + at
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, due - time.monotonic()))
                break
            except TimeoutError:
                pass
            task = asyncio.create_task(self.send(request, due))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        for task in list(in_flight):
            task.cancel()
        await asyncio.gather(*in_flight, return_exceptions=True)

    async def send(self, request: TracedRequest, due: float) -> None:
        body = {**request.body, "model": self.model}
        if self.salt is not None:
            body["cache_salt"] = self.salt
        sent = time.monotonic()
        record: Record = {
            "replayed": self.user,
            "t": sent,
            "priority": request.priority,
            "recorded": request.end,
            "lagMs": (sent - due) * 1000,
        }
        record["outcome"] = await self._stream(body, request, sent, record)
        record["ms"] = (time.monotonic() - sent) * 1000
        self.emit(record)

    async def _stream(
        self, body: dict[str, Any], request: TracedRequest, sent: float, record: Record
    ) -> str:
        """POST and read as the recorded request was read; how it ended."""
        close_after_s = request.end_ms / 1000 if request.end == "cancelled" else None
        events = 0
        try:
            async with asyncio.timeout(close_after_s):
                async with self.client.stream("POST", "/completions", json=body) as reply:
                    if reply.status_code != 200:
                        record["status"] = reply.status_code
                        await reply.aread()
                        return "error"
                    async for line in reply.aiter_lines():
                        if not line.startswith("data:") or line.startswith("data: [DONE]"):
                            continue
                        events += 1
                        if events == 1:
                            record["ttftMs"] = (time.monotonic() - sent) * 1000
                        if request.end == "closed" and events >= max(request.chunks, 1):
                            return "closed"
            return "done"
        except TimeoutError:
            return "cancelled"
        except httpx.HTTPError as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"[:200]
            return "error"


class ReplayDriver(Driver):
    """A driver process of replayed users: `{"add": [{"user": 7}, ...]}`."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        self.traces = load_traces(Path(config["traces"]))
        self.model = str(config["model"])
        self.salt = bool(config.get("salt", True))
        self.client = httpx.AsyncClient(
            base_url=str(config["backendUrl"]).rstrip("/"),
            timeout=httpx.Timeout(60.0, connect=10.0),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=2000),
            trust_env=False,
        )

    def add(self, user: dict[str, Any]) -> None:
        number = int(user["user"])
        replayed = ReplayedUser(number, self.traces, self.client, self.model, self.salt, self.emit)
        self.start(number, replayed.run(self.stop))

    async def close(self) -> None:
        await self.client.aclose()


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text())
    asyncio.run(ReplayDriver(config).serve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
