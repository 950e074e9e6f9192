"""Logging to the editor (window/logMessage), to stderr and optionally to a file.

Nothing ever goes to stdout: in stdio mode stdout is the LSP channel.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Protocol

from lsprotocol import types

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
OUR_LOGGERS = ("server", "cache")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class LogSink(Protocol):
    def window_log_message(self, params: types.LogMessageParams) -> None: ...


def _message_type(level: int) -> types.MessageType:
    if level >= logging.ERROR:
        return types.MessageType.Error
    if level >= logging.WARNING:
        return types.MessageType.Warning
    if level >= logging.INFO:
        return types.MessageType.Info
    return types.MessageType.Log


class EditorLogHandler(logging.Handler):
    """Forwards records to the editor's log; safe to call from worker threads.

    A record logged while one is being sent is not sent: once the channel is closed (the
    editor sent `exit`), sending a record fails, pygls reports the failure, the server
    logs it, and that record would be sent again, without end (stderr still gets it)."""

    def __init__(self, sink: LogSink, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__()
        self.sink = sink
        self.loop = loop
        self._loop_thread = threading.get_ident()
        self._sending = threading.local()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._sending, "now", False):
            return
        self._sending.now = True
        try:
            params = types.LogMessageParams(
                type=_message_type(record.levelno), message=self.format(record)
            )
            if self.loop is not None and threading.get_ident() != self._loop_thread:
                self.loop.call_soon_threadsafe(self.sink.window_log_message, params)
            else:
                self.sink.window_log_message(params)
        except Exception:
            self.handleError(record)
        finally:
            self._sending.now = False


def configure_logging(level: str = "info", file: str | None = None) -> None:
    """Root logger: stderr always (warnings and up), a file if asked, at `level`.

    The file is opened first: one that cannot be (OSError) leaves the logging as it was.
    """
    to_file = None
    if file:
        Path(file).expanduser().parent.mkdir(parents=True, exist_ok=True)
        to_file = logging.FileHandler(Path(file).expanduser(), encoding="utf-8")
        to_file.setLevel(LEVELS[level])
        to_file.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    stderr = logging.StreamHandler()
    stderr.setLevel(logging.WARNING)
    stderr.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(stderr)
    if to_file is not None:
        root.addHandler(to_file)
    for name in OUR_LOGGERS:
        for handler in logging.getLogger(name).handlers:
            handler.setLevel(LEVELS[level])
    # pygls logs every message at debug/info; keep its chatter out of the editor's log.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)


def attach_editor(sink: LogSink, level: str = "info") -> EditorLogHandler:
    """Start forwarding our own loggers (server.*, cache.*) to the editor."""
    handler = EditorLogHandler(sink, _running_loop())
    handler.setLevel(LEVELS[level])
    for name in OUR_LOGGERS:
        logging.getLogger(name).addHandler(handler)
    return handler


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
