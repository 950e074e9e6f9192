"""A test whose server stops answering fails on its own, with the server's stacks in its
report, instead of holding the run until CI's limit.

pytest-timeout (its signal method) raises in the test's event loop, but asyncio logs, and
does not raise, an exception that lands inside one of its callbacks: a server that keeps
the client busy with messages can outlast it, and a teardown that waits for a server that
never answers `shutdown` has no limit of its own. So, with the test's limit T:
- the servers a test started (through `GuardedClient`) are told to print their threads'
  stacks (SIGUSR1, `server.cli.dump_threads_on_signal`) and killed at T - `KILL_EARLY_S`;
  the client then fails what it waits for, and the test fails with the stacks in its
  captured stderr;
- a server that does not shut down within `SHUTDOWN_S` of being asked is dumped and
  killed the same way, and the test fails;
- a test still running at T + `ABORT_LATE_S` ends the run: every thread's stack, exit 70.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

KILL_EARLY_S = 30.0
"""Before pytest-timeout's limit, so its signal then finds a loop with nothing to do."""
ABORT_LATE_S = 120.0
SHUTDOWN_S = 30.0
DUMP_WAIT_S = 2.0
"""How long a server gets to print its stacks before it is killed."""

_live: set[GuardedClient] = set()
_live_lock = threading.Lock()


class GuardedClient(LanguageClient):
    """pytest-lsp's client whose server is dumped and killed where it would hang a test."""

    async def start_io(self, cmd: str, *args: Any, **kwargs: Any) -> None:
        await super().start_io(cmd, *args, **kwargs)
        with _live_lock:
            _live.add(self)

    def _alive(self) -> bool:
        return self._server is not None and self._server.returncode is None

    def kill(self, why: str) -> None:
        """Print the server's stacks to its stderr, then kill it (from any thread)."""
        process = self._server
        if process is None or process.returncode is not None:
            return
        print(f"\nhang guard: server {process.pid} {why}; its threads:", file=sys.stderr)
        with contextlib.suppress(ProcessLookupError):  # it may have exited meanwhile
            if hasattr(signal, "SIGUSR1"):
                os.kill(process.pid, signal.SIGUSR1)
                time.sleep(DUMP_WAIT_S)
            # os.kill, not process.kill(): that polls the child, from a thread not the loop's
            os.kill(process.pid, getattr(signal, "SIGKILL", signal.SIGTERM))

    async def shutdown_session(self) -> None:
        if not self._alive():
            return  # the guard (or the test) ended it: nobody would answer `shutdown`
        try:
            await asyncio.wait_for(super().shutdown_session(), SHUTDOWN_S)
        except TimeoutError:
            why = f"did not shut down within {SHUTDOWN_S:.0f} s of `shutdown` and `exit`"
            await asyncio.to_thread(self.kill, why)
            pytest.fail(f"the server {why}; its stacks are in the captured stderr")

    async def stop(self) -> None:
        if self._alive() and self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait(), SHUTDOWN_S)
            except TimeoutError:
                await asyncio.to_thread(self.kill, f"was still running {SHUTDOWN_S:.0f} s on")
        with _live_lock:
            _live.discard(self)
        await super().stop()


def guarded_client() -> GuardedClient:
    """What `pytest_lsp.make_test_lsp_client` makes (its default features), guarded."""
    client = GuardedClient(converter_factory=default_converter)
    register_lsp_features(client)
    return client


def guarded_config(command: list[str], env: dict[str, str]) -> ClientServerConfig:
    """A pytest-lsp configuration whose clients are `GuardedClient`s."""
    return ClientServerConfig(server_command=command, server_env=env, client_factory=guarded_client)


def limit_of(item: pytest.Item) -> float:
    """The test's pytest-timeout limit: its `timeout` mark's, else the configured one."""
    mark = item.get_closest_marker("timeout")
    if mark is not None and mark.args:
        return float(mark.args[0])
    return float(item.config.getoption("timeout", None) or item.config.getini("timeout") or 0)


def _watch(test: str, limit_s: float, done: threading.Event) -> None:
    kill_at = max(limit_s - KILL_EARLY_S, limit_s / 2)
    if done.wait(kill_at):
        return
    with _live_lock:
        clients = list(_live)
    for client in clients:
        client.kill(f"was still serving {test} {kill_at:.0f} s into it")
    if done.wait(limit_s + ABORT_LATE_S - kill_at):
        return
    print(f"\nhang guard: {test} still runs past its limit; all stacks:", file=sys.stderr)
    faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
    os._exit(70)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    limit_s = limit_of(item)
    if limit_s <= 0:
        return (yield)
    done = threading.Event()
    threading.Thread(target=_watch, args=(item.nodeid, limit_s, done), daemon=True).start()
    try:
        return (yield)
    finally:
        done.set()
