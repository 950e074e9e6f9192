"""One simulated user of `headstart bench`: an editor window typing, with its own server.

The user is a real LSP client (`EditorSession`) of its own `headstart serve` process. It
types a `TypingSession` one key at a time; after every key it asks for an inline
completion at once, and cancels the previous request if that is still open, as VS Code
does. A suggestion equal to the rest of the line is accepted after a reaction time (or,
as often happens, typed over: `TypingSpeed.accept_share`).

A developer (`server.bench.profiles`) types the edits of its plan instead: a pause to read
and think, then a burst of keys in a line, at its end or inside it; a suggestion newly
shown is taken with Tab when the plan says so, and a wrong one taken is then edited into
what the line holds, so the document stays the file.

Each key gives one record (a plain dict, so it crosses processes as JSON):
    t        monotonic time the key was sent (the clock is the machine's, shared)
    outcome  "answered" | "superseded" (the next key came first) | "error"
    ms       key sent to reply received (answered only)
    cached   the server's completion cache answered (no model request)
    joined   answered by joining the model request of an earlier keystroke
    right    the suggestion is the real rest of the line
    timings  the server's stage timings (`$/headstart/completionReport`)
    request  the request sent to the backend (when the server reports requests), with
    bodyFields  which of vLLM's fields its body carried (tokenIds, priority, grammar), and
    chunks   the stream events the server had read when the suggestion was complete
and, besides keys: {"accepted": chars} a Tab; {"pause": s} a developer's pause begins;
{"shown": chars} a suggestion newly shown to a developer; {"edit": keys, "newFile",
"midLine"} a developer's edit begins.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.bench.editor_session import EditorSession, OpenDocument, suggestion_text
from server.bench.profiles import DeveloperSession, Edit
from server.bench.typing_sessions import LineToType, TypingSession

Record = dict[str, Any]


class SimulatedUser:
    def __init__(
        self,
        user: int,
        root: Path,
        session: TypingSession | DeveloperSession,
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
        """Reports that came before their reply (servers before the report moved after it)."""
        self.awaiting_report: dict[tuple[str, int, int, int], Record] = {}
        """Answered keys whose report has not come yet: the server sends it after the reply."""
        self.editor.on_completion_report = self._on_report
        self.document: OpenDocument | None = None
        self.path: Path | None = None

    def _on_report(self, report: Record) -> None:
        key = (report["uri"], report["version"], report["line"], report["character"])
        record = self.awaiting_report.pop(key, None)
        if record is None:
            self.reports[key] = report
        else:
            self._emit_answered(record, report)

    async def _flush_reports(self, wait_s: float = 2.0) -> None:
        """Give the last answers' reports a moment to come, then emit those still without."""
        deadline = time.monotonic() + wait_s
        while self.awaiting_report and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for record in self.awaiting_report.values():
            self.emit(record)
        self.awaiting_report.clear()

    async def run(self, stop: asyncio.Event, index_timeout_s: float = 600) -> None:
        """Start the server, wait for its index, then type until `stop` is set."""
        async with self.editor:
            if not await self.editor.wait_until_indexed(index_timeout_s):
                self.emit({"user": self.user, "warning": "indexing did not end in time"})
            self.emit({"user": self.user, "ready": time.monotonic()})
            if isinstance(self.session, DeveloperSession):
                for edit in self.session.next_edits():
                    if stop.is_set():
                        break
                    await self._type_edit(edit, stop)
            else:
                for line in self.session.next_lines():
                    if stop.is_set():
                        break
                    await self._type_line(line, stop)
            await self._flush_reports()
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
        assert isinstance(self.session, TypingSession)
        self.reports.clear()  # reports of superseded requests: nobody waits for them
        self.editor.replied_at.clear()  # and when their replies came
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
            text = self._answered(pending, key, line.text[column:])
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
                self._answered(pending, key, "")
            except TimeoutError:
                pending[2]["outcome"] = "timeout"
                self.emit(pending[2])

    def _open(self, path: Path, text: str, language: str) -> OpenDocument:
        """`path` open with `text`, the document before it closed if another."""
        if self.document is not None:
            self.editor.close(self.document)
        self.document = self.editor.open(path, text, language)
        self.path = path
        return self.document

    async def _type_edit(self, edit: Edit, stop: asyncio.Event) -> None:
        """A developer's edit: pause, delete the span, type it again key by key; take a
        newly shown suggestion when the plan says so."""
        assert isinstance(self.session, DeveloperSession)
        line = edit.line
        self.emit({"user": self.user, "t": time.monotonic(), "pause": edit.pause_s})
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), edit.pause_s)
        if stop.is_set():
            return
        self.reports.clear()
        self.editor.replied_at.clear()
        cut = line.text[: edit.start] + line.text[edit.end :]
        if self.document is None or self.path != line.path:
            lines = line.path.read_text(encoding="utf-8").split("\n")
            lines[line.row] = cut
            document = self._open(line.path, "\n".join(lines), line.language)
        else:
            document = self.document
            self.editor.replace(document, line.row, 0, len(document.lines[line.row]), cut)
        self.emit(
            {
                "user": self.user,
                "t": time.monotonic(),
                "edit": len(edit.typed),
                "newFile": edit.new_file,
                "midLine": edit.mid_line,
            }
        )
        column, shown, displays = edit.start, "", 0
        pending: tuple[str, asyncio.Future[Any], Record] | None = None
        key = (document.uri, document.version, line.row, column)
        for char, gap in zip(edit.typed, edit.gaps_s, strict=True):
            if stop.is_set():
                break
            if pending is not None and not pending[1].done():
                self.editor.cancel_request(pending[0])
                pending[2]["outcome"] = "superseded"
                self.emit(pending[2])
            self.editor.type(document, line.row, column, char)
            column += 1
            shown = shown[1:] if shown.startswith(char) else ""
            record: Record = {"user": self.user, "t": time.monotonic(), "outcome": "pending"}
            msg_id, future = self.editor.request_inline_completion(document, line.row, column)
            key = (document.uri, document.version, line.row, column)
            future.add_done_callback(functools.partial(_note_done, record=record))
            pending = (msg_id, future, record)
            await asyncio.wait([future], timeout=gap)
            if not future.done():
                continue
            rest = line.text[column : edit.end]
            first = self._answered(pending, key, rest, line.text[column:]).split("\n")[0]
            pending = None
            if first and first != shown:  # typing through a suggestion does not show it again
                shown = first
                self.emit({"user": self.user, "t": time.monotonic(), "shown": len(first)})
                displays += 1
                if rest and edit.takes[displays - 1]:
                    await asyncio.sleep(self.session.accept_delay_s())
                    self._accept(document, line.row, column, first, rest)
                    return
            await asyncio.sleep(max(0.0, record["t"] + gap - time.monotonic()))
        if pending is not None:  # the edit's last key: its answer may still come
            try:
                await asyncio.wait_for(asyncio.shield(pending[1]), 10)
                self._answered(pending, key, "")
            except TimeoutError:
                pending[2]["outcome"] = "timeout"
                self.emit(pending[2])

    def _accept(self, document: OpenDocument, row: int, column: int, text: str, rest: str) -> None:
        """Tab on `text` at `column`; the user then edits it into `rest`, what was meant."""
        right = text in (rest, rest + document.lines[row][column:])  # the suffix is there
        if right:
            self.editor.type(document, row, column, rest)
        else:
            self.editor.type(document, row, column, text)
            self.editor.replace(document, row, column, column + len(text), rest)
        self.emit({"user": self.user, "t": time.monotonic(), "accepted": len(text), "right": right})

    def _answered(
        self,
        pending: tuple[str, asyncio.Future[Any], Record],
        key: tuple[str, int, int, int],
        rest: str,
        line_rest: str = "",
    ) -> str:
        """Fill in the record of a request whose reply came, and emit it once its report is
        here too; its suggestion."""
        msg_id, future, record = pending
        done = self.editor.replied_at.pop(msg_id, record.get("done", time.monotonic()))
        exception = future.exception()
        report = self.reports.pop(key, None)
        if exception is not None:
            record |= {"outcome": "error", "error": str(exception)}
            self.emit(record)
            return ""
        text = suggestion_text(future.result())
        record["outcome"] = "answered"
        record["ms"] = (done - record["t"]) * 1000
        record["chars"] = len(text)
        # at the line's end (rest "") a next-line suggestion is not "the rest of the line"
        record["right"] = bool(rest) and text.split("\n")[0] in (rest, line_rest or rest)
        if report is None:
            self.awaiting_report[key] = record
        else:
            self._emit_answered(record, report)
        return text

    def _emit_answered(self, record: Record, report: Record) -> None:
        """An answered key's record, with what its server's report says."""
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
            record["bodyFields"] = report.get("bodyFields")
            record["chunks"] = report.get("chunks")
        self.emit(record)


def _note_done(future: asyncio.Future[Any], record: Record) -> None:
    """When the reply came; and its error retrieved, so a superseded one is not reported
    as 'never retrieved'."""
    record.setdefault("done", time.monotonic())
    if not future.cancelled():
        future.exception()
