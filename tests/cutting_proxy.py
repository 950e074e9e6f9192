"""A TCP proxy that resets a completion response after a chosen number of bytes.

Used between Headstart's backend client and a model server (the fake or a real vLLM) to
break streams the way a network does: the client sees a connection reset mid-stream.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any


class CuttingProxy:
    """Forwards TCP to the backend; when armed, resets the next completion response after
    `cut` bytes."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.cut: int | None = None
        self.last_response_bytes = 0
        self.prompts: list[Any] = []
        """The `prompt` of every completion request seen (text, or token ids)."""
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        state: dict[str, Any] = {"counting": False, "sent": 0, "cut": None}

        async def client_to_upstream() -> None:
            while data := await reader.read(65536):
                if b"POST /v1/completions" in data or b"POST /completions" in data:
                    state.update(counting=True, sent=0, cut=self.cut)
                    self.cut = None
                    self._record_prompt(data)
                up_writer.write(data)
                await up_writer.drain()
            up_writer.close()

        async def upstream_to_client() -> None:
            while data := await up_reader.read(65536):
                if state["counting"]:
                    cut = state["cut"]
                    if cut is not None and state["sent"] + len(data) >= cut:
                        writer.write(data[: cut - state["sent"]])
                        await writer.drain()
                        writer.transport.abort()  # RST, as a dropped connection
                        up_writer.transport.abort()
                        return
                    state["sent"] += len(data)
                    self.last_response_bytes = state["sent"]
                writer.write(data)
                await writer.drain()
            writer.close()

        try:
            await asyncio.gather(client_to_upstream(), upstream_to_client())
        except (OSError, asyncio.CancelledError):
            writer.transport.abort()
            up_writer.transport.abort()

    def _record_prompt(self, data: bytes) -> None:
        """The prompt of a request whose body came in the same read (small requests)."""
        body = data.partition(b"\r\n\r\n")[2]
        try:
            self.prompts.append(json.loads(body)["prompt"])
        except (ValueError, KeyError, TypeError):
            self.prompts.append(None)
