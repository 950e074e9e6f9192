"""Every request sent to the backend, one JSON line each (`log.requestTrace`).

What it is for: `headstart bench replay` sends a recorded team's requests again, with their
timing and their cancels, from a driver far lighter than one editor and one server per
user; and a user can see exactly what Headstart sent. Each line is written when its
request ends:

    sent     wall-clock time the request was sent (seconds since the epoch)
    body     the JSON body POSTed to /completions, as sent
    firstMs  ms from sending to the first event (absent when none came)
    endMs    ms from sending to the end
    chunks   chunks received that carried text or token ids
    end      "done" (the backend finished), "cancelled" (the request's task was
             cancelled: a newer keystroke, a cancel from the editor), "closed" (the server
             stopped reading: it had what it needed), "error"
    lineChunks  events received when its one-line suggestion was shown while the stream
             went on in the background (`completion.continueInBackground`); absent
             otherwise. Replay closes the request there while its user's background work
             is paused, as the server would.
    typesOn  true for a keystroke's request whose document is the previous request's with
             characters typed at its cursor: a server that finds the previous one still
             running waits for it (`completion.joinInFlight`), and so does replay.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger(__name__)


NOTE: ContextVar[Mapping[str, Any] | None] = ContextVar("request_trace_note", default=None)
"""Fields added to the trace line of each request sent in the current context: the layer
that knows what a request is for (the language server's `typesOn`) says so without the
backend client knowing about editors."""


class RequestTrace:
    """Appends trace lines to one file; a failed write is logged once and tracing stops."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None
        self._failed = False

    def record(
        self,
        body: dict[str, Any],
        sent: float,
        first_ms: float | None,
        end_ms: float,
        chunks: int,
        end: str,
        line_chunks: int | None = None,
    ) -> None:
        if self._failed:
            return
        line: dict[str, Any] = {"sent": round(sent, 6), "body": body}
        if first_ms is not None:
            line["firstMs"] = round(first_ms, 3)
        line.update(endMs=round(end_ms, 3), chunks=chunks, end=end)
        if line_chunks is not None:
            line["lineChunks"] = line_chunks
        line.update(NOTE.get() or {})
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")
            self._file.write(json.dumps(line) + "\n")
            self._file.flush()
        except OSError as exc:
            self._failed = True
            log.error("request trace: cannot write %s (%s); not tracing requests", self.path, exc)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_trace(path: Path) -> list[dict[str, Any]]:
    """A trace's requests in the order they were sent; lines that do not parse are skipped
    (a server killed mid-write leaves half a line)."""
    requests = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if isinstance(request, dict) and "sent" in request and "body" in request:
            requests.append(request)
    return sorted(requests, key=lambda r: float(r["sent"]))
