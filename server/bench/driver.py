"""What every driver process of `headstart bench` does, whatever it drives.

A driver takes commands on stdin, one JSON object a line (`{"add": [...]}` starts users,
`{"stop": true}` stops them all and exits), and writes to stdout, one JSON object a line,
its users' records in batches and, every 100 ms, its event loop's lag (how late a 100 ms
sleep woke up) and its CPU time so far, so a saturated driver shows in the results instead
of passing for latency.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

Record = dict[str, Any]


class Driver:
    """Subclasses start one user per entry of an "add" command (`add`)."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.users: list[asyncio.Task[None]] = []
        self.out: list[str] = []

    def emit(self, record: Record) -> None:
        self.out.append(json.dumps(record))

    def add(self, user: dict[str, Any]) -> None:
        raise NotImplementedError

    def start(self, user: int, run: Coroutine[Any, Any, None]) -> None:
        """Run one user until `stop`; its failure is reported, and the others go on."""

        async def guarded() -> None:
            try:
                await run
            except Exception as exc:
                self.emit({"user": user, "failed": f"{type(exc).__name__}: {exc}"})

        self.users.append(asyncio.create_task(guarded()))

    async def close(self) -> None:
        """After the users stopped: what the driver holds (a connection pool)."""

    async def flush(self) -> None:
        while True:
            asked = time.monotonic()
            await asyncio.sleep(0.1)
            lag_ms = (time.monotonic() - asked - 0.1) * 1000
            self.emit({"lag": lag_ms, "t": time.monotonic(), "cpu": time.process_time()})
            if self.out:
                sys.stdout.write("\n".join(self.out) + "\n")
                sys.stdout.flush()
                self.out.clear()

    async def serve(self) -> None:
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        flusher = asyncio.create_task(self.flush())
        while line := await reader.readline():
            command = json.loads(line)
            for user in command.get("add", []):
                self.add(user)
            if command.get("stop"):
                break
        self.stop.set()
        await asyncio.gather(*self.users)
        await self.close()
        await asyncio.sleep(0.2)  # the last batch
        flusher.cancel()
        sys.stdout.write("\n".join([*self.out, json.dumps({"stopped": True})]) + "\n")
        sys.stdout.flush()


def main(make: Callable[[dict[str, Any]], Driver], argv: list[str]) -> int:
    """`python -m <driver module> CONFIG.json`: the driver made from the config, served."""
    config = json.loads(Path(argv[0]).read_text())
    asyncio.run(make(config).serve())
    return 0
