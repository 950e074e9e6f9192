"""A process of `headstart bench` that drives some of the simulated users.

One process cannot drive hundreds of editors without falling behind, so the bench spreads
them over several of these. Commands come on stdin, one JSON object a line:
`{"add": [{"user": 3, "requests": false}, ...]}` starts users, `{"stop": true}` stops
them all and exits. Out on stdout, one JSON object a line: the users' records
(`server.bench.user`), and every second the process's scheduling lag (how late a 100 ms
sleep woke up), so a saturated driver shows in the results instead of passing for
server latency.

    python -m server.bench.worker CONFIG.json
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

from server.bench.typing_sessions import TypingSession, TypingSpeed, lines_worth_typing
from server.bench.user import Record, SimulatedUser


class Worker:
    def __init__(self, config: dict[str, Any]) -> None:
        self.root = Path(config["root"])
        self.settings: dict[str, Any] = config["settings"]
        self.server_env: dict[str, str] = config["serverEnv"]
        self.speed = TypingSpeed(**config.get("speed", {}))
        languages = config.get("languages")
        self.lines = lines_worth_typing(self.root, frozenset(languages) if languages else None)
        self.seed = int(config.get("seed", 0))
        self.stop = asyncio.Event()
        self.users: list[asyncio.Task[None]] = []
        self.out: list[str] = []

    def emit(self, record: Record) -> None:
        self.out.append(json.dumps(record))

    def add(self, user: int, report_requests: bool) -> None:
        settings = copy.deepcopy(self.settings)
        log = settings.setdefault("log", {})
        log["completionReports"] = "requests" if report_requests else "timings"
        session = TypingSession(self.lines, self.seed * 100_003 + user, self.speed)
        simulated = SimulatedUser(user, self.root, session, settings, self.server_env, self.emit)
        self.users.append(asyncio.create_task(self._run(simulated)))

    async def _run(self, simulated: SimulatedUser) -> None:
        try:
            await simulated.run(self.stop)
        except Exception as exc:  # one broken user must not stop the others
            self.emit({"user": simulated.user, "failed": f"{type(exc).__name__}: {exc}"})

    async def flush(self) -> None:
        """Write the records out in batches, and the lag of this process's event loop."""
        while True:
            asked = time.monotonic()
            await asyncio.sleep(0.1)
            lag_ms = (time.monotonic() - asked - 0.1) * 1000
            self.emit({"lag": lag_ms, "t": time.monotonic()})
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
                self.add(int(user["user"]), bool(user.get("requests")))
            if command.get("stop"):
                break
        self.stop.set()
        await asyncio.gather(*self.users)
        await asyncio.sleep(0.2)  # the last batch
        flusher.cancel()
        sys.stdout.write("\n".join([*self.out, json.dumps({"stopped": True})]) + "\n")
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text())
    asyncio.run(Worker(config).serve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
