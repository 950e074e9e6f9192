"""The language server's side of `backend.mode: local`: start or join the shared vLLM
(server.backend.process) off the event loop, show it in the editor, and point the
completion client at it.

Start-up takes minutes (loading weights, compiling); meanwhile completions are not tried
(one log line says why) rather than failing, keystroke after keystroke, against a port
where nothing listens yet. The vLLM outlives the window: other windows share it, and
`headstart backend stop` ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
import uuid
from typing import Protocol

from lsprotocol import types
from pygls.progress import Progress

from server.backend.launch_plan import BackendStartError, LaunchSpec
from server.backend.process import (
    BackendState,
    StartCancelled,
    claim_backend,
    wait_until_ready,
)
from server.config import BackendSettings, Settings

log = logging.getLogger(__name__)


class BackendHost(Protocol):
    """What the local backend needs of the language server that holds it
    (server.lsp.language_server.HeadstartServer), named here so the two do not import
    each other."""

    settings: Settings
    client_name: str | None

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    @property
    def work_done_progress(self) -> Progress: ...

    def window_show_message(self, params: types.ShowMessageParams) -> None: ...

    async def replace_backend(self) -> None: ...


class LocalBackend:
    """The shared local vLLM as one language server sees it."""

    def __init__(self, ls: BackendHost) -> None:
        self.ls = ls
        self.enabled = False
        """Set at `initialized`: before it, a server may not send requests (progress)."""
        self.spec: LaunchSpec | None = None
        self.state: BackendState | None = None
        self.ready = False
        self.failure: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._cancel = threading.Event()
        self._told_waiting = False

    def client_settings(self, backend: BackendSettings) -> BackendSettings:
        """`backend` with the local vLLM's URL in local mode (once it is known)."""
        if backend.mode == "local" and self.state is not None:
            return backend.model_copy(update={"url": self.state.url})
        return backend

    def waiting(self) -> bool:
        """Whether completions must wait: local mode, and the vLLM is not ready."""
        if self.ls.settings.backend.mode != "local" or self.ready:
            return False
        if not self._told_waiting:
            self._told_waiting = True
            why = f"it did not start ({self.failure})" if self.failure else "it is starting"
            log.info("no completions until the local vLLM answers: %s", why)
        return True

    async def enable(self) -> None:
        self.enabled = True
        await self.follow(self.ls.settings)

    async def follow(self, settings: Settings) -> None:
        """Start or join the local vLLM when the settings ask for it (again)."""
        if not self.enabled:
            return
        if settings.backend.mode != "local":
            await self.close()
            self.spec, self.state, self.ready = None, None, False
            return
        spec = LaunchSpec.from_settings(settings)
        if spec == self.spec and (self.ready or self._running()):
            return
        await self.close()
        self.spec, self.ready, self.failure, self._told_waiting = spec, False, None, False
        self._cancel = threading.Event()
        self._task = asyncio.create_task(self._start(spec, self._cancel))

    def _running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def close(self) -> None:
        """Stop waiting for the vLLM (it goes on starting, for the next window)."""
        self._cancel.set()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    async def _start(self, spec: LaunchSpec, cancel: threading.Event) -> None:
        progress = await WorkDoneProgress.begin(self.ls, "Headstart: starting vLLM")
        loop = asyncio.get_running_loop()

        def say(message: str) -> None:
            log.debug("local vLLM: %s", message)
            loop.call_soon_threadsafe(progress.report, message)

        client = self.ls.client_name or "an editor"
        try:
            claim = await asyncio.to_thread(
                claim_backend,
                spec,
                progress=say,
                cancel=cancel,
                started_by=f"the language server of {client} (pid {os.getpid()})",
            )
            self.state = claim.state
            await self.ls.replace_backend()
            state = claim.state
            if claim.started_here:
                log.info(
                    "starting %s, model %s, at %s (log: %s)",
                    state.description,
                    state.model,
                    state.url,
                    state.log_path,
                )
            else:
                log.info(
                    "sharing the local vLLM at %s (pid %d, started by %s)",
                    state.url,
                    state.pid,
                    state.started_by,
                )
            for note in claim.notes:
                log.warning("local vLLM: %s", note)
            remaining = spec.startup_timeout_s
            if not claim.started_here:  # its start-up began before we came
                remaining -= max(0.0, time.time() - state.started_at)
            await asyncio.to_thread(
                wait_until_ready,
                claim,
                max(remaining, 5.0),
                progress=say,
                cancel=cancel,
                report_every_s=1.0,
            )
        except StartCancelled:
            progress.end("stopped waiting")
            return
        except BackendStartError as exc:
            self.failure = exc.summary
            self._told_waiting = False
            log.error("the local vLLM did not start: %s", exc)
            self.ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Error,
                    message=f"Headstart: the local vLLM did not start: {exc.summary}"
                    + (" (the Headstart log has vLLM's last lines)" if exc.log_tail else ""),
                )
            )
            progress.end("failed")
            return
        except asyncio.CancelledError:
            cancel.set()
            progress.end("stopped waiting")
            raise
        self.ready = True
        weights = "; random weights: suggestions are noise" if state.dummy_weights else ""
        log.info("local vLLM ready at %s, serving %s%s", state.url, state.model, weights)
        progress.end(f"ready: {state.model}")


class WorkDoneProgress:
    """Server-initiated work-done progress, where the client supports it; else nothing."""

    def __init__(self, ls: BackendHost, token: str | None) -> None:
        self.ls = ls
        self.token = token

    @classmethod
    async def begin(cls, ls: BackendHost, title: str) -> WorkDoneProgress:
        window = ls.client_capabilities.window
        if not (window and window.work_done_progress):
            return cls(ls, None)
        token = f"headstart-{uuid.uuid4()}"
        try:
            await ls.work_done_progress.create_async(token)
        except Exception as exc:  # the client may refuse; the work goes on regardless
            log.debug("no progress for %r: %s", title, exc)
            return cls(ls, None)
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title))
        return cls(ls, token)

    def report(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message)
            )

    def end(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.token = None
