"""One simulated user of `headstart bench`: an editor window typing, with its own server.

The user is a real LSP client (`EditorSession`) of its own `headstart serve` process. It
types a `TypingSession` one key at a time; after every key it asks for an inline
completion at once, and cancels the previous request if that is still open, as VS Code
does. A suggestion equal to the rest of the line is accepted after a reaction time (or,
as often happens, typed over: `TypingSpeed.accept_share`).

Each key gives one record (a plain dict, so it crosses processes as JSON):
    t        monotonic time the key was sent (the clock is the machine's, shared)
    outcome  "answered" | "superseded" (the next key came first) | "error"
    ms       key sent to reply received (answered only)
    cached   the server's completion cache answered (no model request)
    joined   answered by joining the model request of an earlier keystroke
    right    the suggestion is the real rest of the line
    timings  the server's stage timings (`$/headstart/completionReport`)
    request  the request sent to the backend (when the server reports requests)
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.bench.editor_session import EditorSession, OpenDocument, suggestion_text
from server.bench.typing_sessions import LineToType, TypingSession

Record = dict[str, Any]


class SimulatedUser:
    def __init__(
        self,
        user: int,
        root: Path,
        session: TypingSession,
        settings: dict[str, Any],
        server_env: dict[str, str],
        emit: Callable[[Record], None],
    ) -> None:
        self.user = user
        self.root = root
        self.session = session
        self.editor = EditorSession(root, settings, server_env)
        self.emit = emit
        self.reports: dict[tuple[str, int, int, int], Record] = {}
        self.editor.on_completion_report = self._on_report
        self.document: OpenDocument | None = None
        self.path: Path | None = None

    def _on_report(self, report: Record) -> None:
        key = (report["uri"], report["version"], report["line"], report["character"])
        self.reports[key] = report

    async def run(self, stop: asyncio.Event, index_timeout_s: float = 600) -> None:
        """Start the server, wait for its index, then type until `stop` is set."""
        async with self.editor:
            if not await self.editor.wait_until_indexed(index_timeout_s):
                self.emit({"user": self.user, "warning": "indexing did not end in time"})
            self.emit({"user": self.user, "ready": time.monotonic()})
            for line in self.session.next_lines():
                if stop.is_set():
                    break
                await self._type_line(line, stop)
            for warning in self.editor.warnings:
                self.emit({"user": self.user, "warning": warning})

    def _start_line(self, line: LineToType) -> OpenDocument:
        """The document with `line` cleared after its indentation, opened or edited."""
        if self.document is None or self.path != line.path:
            if self.document is not None:
                self.editor.close(self.document)
            lines = line.path.read_text(encoding="utf-8").split("\n")
            lines[line.row] = line.text[: line.start]
            self.document = self.editor.open(line.path, "\n".join(lines), line.language)
            self.path = line.path
        else:
            current = self.document.lines[line.row]
            self.editor.replace(self.document, line.row, line.start, len(current), "")
        return self.document

    async def _type_line(self, line: LineToType, stop: asyncio.Event) -> None:
        self.reports.clear()  # reports of superseded requests: nobody waits for them
        document = self._start_line(line)
        await asyncio.sleep(self.session.line_pause_s())
        column = line.start
        pending: tuple[str, asyncio.Future[Any], Record] | None = None
        while column < len(line.text) and not stop.is_set():
            char = line.text[column]
            if pending is not None and not pending[1].done():
                self.editor.cancel_request(pending[0])
                pending[2]["outcome"] = "superseded"
                self.emit(pending[2])
            self.editor.type(document, line.row, column, char)
            column += 1
            record: Record = {"user": self.user, "t": time.monotonic(), "outcome": "pending"}
            msg_id, future = self.editor.request_inline_completion(document, line.row, column)
            key = (document.uri, document.version, line.row, column)
            future.add_done_callback(functools.partial(_note_done, record=record))
            pending = (msg_id, future, record)
            gap = self.session.key_gap_s(char)
            await asyncio.wait([future], timeout=gap)
            if not future.done():
                continue
            text = self._answered(record, future, key, line.text[column:])
            pending = None
            if column < len(line.text) and record.get("right") and self.session.accepts():
                await asyncio.sleep(self.session.accept_delay_s())
                self.editor.type(document, line.row, column, line.text[column:])
                self.emit({"user": self.user, "t": time.monotonic(), "accepted": len(text)})
                break
            await asyncio.sleep(max(0.0, record["t"] + gap - time.monotonic()))
        if pending is not None:  # the line's last key: its answer may still come
            try:
                await asyncio.wait_for(asyncio.shield(pending[1]), 10)
                self._answered(pending[2], pending[1], key, "")
            except TimeoutError:
                pending[2]["outcome"] = "timeout"
                self.emit(pending[2])

    def _answered(
        self, record: Record, future: asyncio.Future[Any], key: tuple[str, int, int, int], rest: str
    ) -> str:
        """Fill in and emit the record of a request whose reply came; its suggestion."""
        exception = future.exception()
        report = self.reports.pop(key, None)
        if exception is not None:
            record |= {"outcome": "error", "error": str(exception)}
            self.emit(record)
            return ""
        text = suggestion_text(future.result())
        record["outcome"] = "answered"
        record["ms"] = (record.get("done", time.monotonic()) - record["t"]) * 1000
        record["chars"] = len(text)
        # at the line's end (rest "") a next-line suggestion is not "the rest of the line"
        record["right"] = bool(rest) and text.split("\n")[0] == rest
        if report is not None:
            record["cached"] = bool(report.get("cached"))
            record["joined"] = bool(report.get("joined"))
            record["serverMs"] = report.get("serverMs")
            record["timings"] = report.get("timingsMs")
            record["background"] = report.get("background")
            record["prompts"] = report.get("prompts")
            record["mode"] = report.get("mode")
            if report.get("error"):
                record["error"] = report["error"]
            if "request" in report:
                record["request"] = report["request"]
        self.emit(record)
        return text


def _note_done(future: asyncio.Future[Any], record: Record) -> None:
    """When the reply came; and its error retrieved, so a superseded one is not reported
    as 'never retrieved'."""
    record.setdefault("done", time.monotonic())
    if not future.cancelled():
        future.exception()
