"""A driver process of `headstart bench` (`server.bench.driver`) for simulated editors.

One process cannot drive hundreds of editors without falling behind, so the bench spreads
them over several of these. `{"add": [{"user": 3, "requests": false}, ...]}` starts
users, each an editor with its own `headstart serve` (`server.bench.user`), a typist or,
with "profile": "developer" in the config, a developer (`server.bench.profiles`); "requests"
asks its server to report the backend requests, and "trace" to trace them to that file.

    python -m server.bench.worker CONFIG.json
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from server.bench import driver
from server.bench.driver import Driver
from server.bench.profiles import DeveloperSession
from server.bench.typing_sessions import (
    TypingSession,
    TypingSpeed,
    lines_worth_typing,
    user_seed,
)
from server.bench.user import SimulatedUser


class Worker(Driver):
    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        self.root = Path(config["root"])
        self.settings: dict[str, Any] = config["settings"]
        self.server_env: dict[str, str] = config["serverEnv"]
        self.speed = TypingSpeed(**config.get("speed", {}))
        languages = config.get("languages")
        self.lines = lines_worth_typing(self.root, frozenset(languages) if languages else None)
        self.seed = int(config.get("seed", 0))
        self.lines_per_visit = int(config.get("linesPerVisit", 0))
        self.profile = str(config.get("profile", "typist"))

    def add(self, user: dict[str, Any]) -> None:
        number = int(user["user"])
        settings = copy.deepcopy(self.settings)
        log = settings.setdefault("log", {})
        log["completionReports"] = "requests" if user.get("requests") else "timings"
        if user.get("trace"):
            log["requestTrace"] = str(user["trace"])
        seed = user_seed(self.seed, number)
        session: TypingSession | DeveloperSession
        if self.profile == "developer":
            session = DeveloperSession(self.lines, seed)
        else:
            session = TypingSession(self.lines, seed, self.speed, self.lines_per_visit)
        simulated = SimulatedUser(number, self.root, session, settings, self.server_env, self.emit)
        self.start(number, simulated.run(self.stop))


if __name__ == "__main__":
    sys.exit(driver.main(Worker, sys.argv[1:]))
