"""A compute-bound engine for the fake model (fake_openai.py --prefill-tokens-per-s).

Why: the fake answers every request at once, so nothing that reacts to a loaded backend
(the language server's background throttle and joins, a replayed user's joins) can be
seen without a GPU. With a prefill rate R, each prompt's tokens that miss the prefix
cache take 1/R s of one shared prefill queue before its first chunk, served by priority
(lower first, as vLLM's priority scheduling) and then by arrival, so first tokens wait
longer as the load rises, as on a saturated GPU, where prefill is what runs out. A
request whose client hangs up while it waits is dropped unserved, as vLLM aborts it.

This models load, not vLLM's speed: its figures compare runs against each other on the
same fake, never against a GPU. Decoding is not slowed by load.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any


@dataclass(order=True)
class _Waiting:
    priority: int
    arrival: int
    tokens: int = field(compare=False)
    done: asyncio.Future[None] = field(compare=False)
    dropped: bool = field(default=False, compare=False)


class PrefillQueue:
    """One prefill queue of a fixed rate, in prompt tokens a second."""

    def __init__(self, tokens_per_s: float) -> None:
        if tokens_per_s <= 0:
            raise ValueError(f"the prefill rate must be positive, got {tokens_per_s!r}")
        self.seconds_per_token = 1.0 / tokens_per_s
        self.heap: list[_Waiting] = []
        self.arrivals = itertools.count()
        self.wake = asyncio.Event()
        self.worker: asyncio.Task[None] | None = None
        self.dropped = 0
        """Requests whose client left while they waited."""
        self.busy_s = 0.0
        """Seconds spent prefilling, for the rate actually used."""

    @property
    def waiting(self) -> int:
        """Requests queued and not dropped (vLLM's num_requests_waiting)."""
        return sum(1 for item in self.heap if not item.dropped)

    async def prefill(self, tokens: int, priority: int, gone: asyncio.Event) -> bool:
        """Wait for this prompt's turn and its prefill; False if the client left first."""
        if self.worker is None:
            self.worker = asyncio.create_task(self._run())
        item = _Waiting(priority, next(self.arrivals), tokens, asyncio.Future())
        heapq.heappush(self.heap, item)
        self.wake.set()
        left: asyncio.Future[Any] = asyncio.ensure_future(gone.wait())
        try:
            await asyncio.wait((item.done, left), return_when=asyncio.FIRST_COMPLETED)
        finally:
            left.cancel()
        if item.done.done():
            return True
        item.dropped = True
        self.dropped += 1
        return False

    async def _run(self) -> None:
        while True:
            while not self.heap:
                self.wake.clear()
                await self.wake.wait()
            item = heapq.heappop(self.heap)
            if item.dropped:
                continue
            seconds = item.tokens * self.seconds_per_token
            await asyncio.sleep(seconds)
            self.busy_s += seconds
            if not item.done.done():
                item.done.set_result(None)
