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
