"""The server's JSON-RPC protocol forgets each notification once it is handled (pygls keeps
their futures for ever: a kilobyte a keystroke, found by a soak)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from pygls.lsp.server import LanguageServer

from server.lsp.protocol import HeadstartProtocol


async def test_handled_notifications_leave_no_future_behind() -> None:
    ls = LanguageServer("probe", "0", protocol_cls=HeadstartProtocol)
    handled: list[str] = []

    @ls.feature("probe/coroutine")
    async def coroutine(params: Any) -> None:
        handled.append("coroutine")

    @ls.feature("probe/generator")
    def generator(params: Any) -> Iterator[Any]:
        handled.append("generator")
        yield from ()

    @ls.feature("probe/plain")
    def plain(params: Any) -> None:
        handled.append("plain")

    for _ in range(100):
        for method in ("probe/coroutine", "probe/generator", "probe/plain"):
            ls.protocol._handle_notification(method, None)
    await asyncio.sleep(0.05)

    assert len(handled) == 300
    assert ls.protocol._request_futures == {}


async def test_shutdown_cancels_notifications_still_running() -> None:
    """pygls's shutdown cancels pending futures while iterating them: forgetting one then
    must wait for the loop (a CI run saw "dictionary changed size during iteration")."""
    ls = LanguageServer("probe", "0", protocol_cls=HeadstartProtocol)
    never = asyncio.Event()

    async def slow(params: Any) -> None:
        await never.wait()

    @ls.feature("probe/slow")
    def slow_behind_a_generator(params: Any) -> Iterator[Any]:
        """As pygls's own didChangeConfiguration wrapper runs a coroutine handler: the
        generator's future is a concurrent one, whose cancel runs its callbacks at once."""
        yield slow, (params,), None

    for _ in range(3):
        ls.protocol._handle_notification("probe/slow", None)
    await asyncio.sleep(0.01)
    assert ls.protocol._request_futures  # still running

    list(ls.protocol.lsp_shutdown())  # pygls's own shutdown, as a request runs it
    await asyncio.sleep(0.05)

    assert ls.protocol._request_futures == {}
