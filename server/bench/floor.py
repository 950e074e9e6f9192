"""The floor of `headstart bench run`: what the backend alone takes for the very requests
one user's server sent, to read the server's time on them against.

The first user's model requests (its `$/headstart/completionReport`s carry them) are sent
again straight to the backend after the run, one after another in their order, each with
the body the server sent (`server.backend.client.request_body` with the fields the
report says it carried: the prompt or its token ids, the stop rules, the priority, the
healing grammar or its regex). Two things keep the copy fair:
- On vLLM it carries a `cache_salt` of its own: a request then meets the prefix cache the
  floor's previous requests left, as the server's met the one its previous requests left,
  not the server's own copy of the same prompt (sent seconds before and cached whole,
  which made an earlier floor's first token ~5 ms early). The requests of the warm-up
  before the measured step go first, unmeasured, as the server's did.
- It reads each stream to the event the server had its answer at (the report's
  `chunks`) and closes it there, as the server closes a line's stream: the time to the
  first event and to that one are the backend's share of the server's first chunk and
  stream, so `ratio` (the server's round trip over the floor's, p50 on the same
  requests) is Headstart's cost over the model's.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from typing import Any

import httpx

from server.backend.client import (
    BackendError,
    CompletionBackend,
    CompletionRequest,
    ModelInfo,
    Priority,
    request_body,
)
from server.backend.engines import engine_of
from server.bench.stats import quantiles
from server.config import BackendSettings

Record = dict[str, Any]
SALT_PREFIX = "headstart-floor-"


@dataclasses.dataclass(frozen=True)
class FloorRequest:
    body: dict[str, Any]
    chunks: int | None
    """The stream's events the server had read when its suggestion was complete; None:
    read the whole stream."""
    server_ms: float | None
    """The keystroke's round trip as the editor saw it; None for a warm-up request."""


def floor_requests(
    records: Iterable[Record], measured_from: float, model: ModelInfo, salt: str | None
) -> list[FloorRequest]:
    """The bodies to send again, in order, from a user's records: those before
    `measured_from` (the warm-up) unmeasured. Keys answered from the suggestion cache
    or by joining another key's request sent nothing of their own and are left out."""
    chosen = []
    for record in sorted(records, key=lambda r: r.get("t", 0.0)):
        sent = record.get("request")
        if not sent or record.get("joined") or record.get("cached"):
            continue
        request = CompletionRequest(**{**sent, "priority": Priority(sent["priority"])})
        fields = record.get("bodyFields") or {}
        body = request_body(
            request,
            model,
            token_ids=fields.get("tokenIds", True),
            priority=fields.get("priority", True),
            grammar=fields.get("grammar", True),
        )
        if salt is not None:
            body["cache_salt"] = salt
        measured = record.get("t", 0.0) >= measured_from and record.get("ms") is not None
        chosen.append(
            FloorRequest(body, record.get("chunks") or None, record["ms"] if measured else None)
        )
    return chosen


async def served_model(url: str, model: str) -> ModelInfo:
    """`model` as the server resolves it (`CompletionBackend.model`: its /models entry,
    whose `owned_by` says which fields it takes); where /models does not answer, a model
    that takes plain OpenAI bodies."""
    backend = CompletionBackend(BackendSettings.model_validate({"url": url, "model": model}))
    try:
        return await backend.model()
    except BackendError:
        return ModelInfo(id=model, owned_by="", max_model_len=None)
    finally:
        await backend.aclose()


async def run_floor(
    url: str, model: str, records: list[Record], measured_from: float, limit: int
) -> dict[str, Any] | None:
    """Send `records`' requests again (at most `limit` measured ones, after the warm-up's);
    their figures, or None when there was nothing to send."""
    info = await served_model(url, model)
    async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
        salt = f"{SALT_PREFIX}{time.time_ns()}" if engine_of(info.owned_by) == "vllm" else None
        requests = floor_requests(records, measured_from, info, salt)
        measured = [r for r in requests if r.server_ms is not None][:limit]
        if not measured:
            return None
        last = requests.index(measured[-1])
        first_event: list[float] = []
        answer: list[float] = []
        server: list[float] = []
        for request in requests[: last + 1]:
            times = await timed_stream(client, url, request.body, request.chunks)
            if times is not None and request.server_ms is not None:
                first_event.append(times[0])
                answer.append(times[1])
                server.append(request.server_ms)
    answer_ms, server_ms = quantiles(answer), quantiles(server)
    floor_p50, server_p50 = answer_ms["p50"], server_ms["p50"]
    return {
        "prompts": len(answer),
        "warmup": last + 1 - len(measured),
        "salted": salt is not None,
        "ttftMs": quantiles(first_event),
        "answerMs": answer_ms,
        "serverMs": server_ms,
        "ratio": server_p50 / floor_p50 if floor_p50 and server_p50 else None,
    }


async def timed_stream(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], chunks: int | None
) -> tuple[float, float] | None:
    """(ms to the first event, ms to event `chunks` or the stream's end) of one streamed
    completion, closed there; None when the backend refused it or the connection broke."""
    started = time.perf_counter()
    first: float | None = None
    events = 0
    try:
        async with client.stream("POST", f"{url.rstrip('/')}/completions", json=body) as reply:
            if reply.status_code != 200:
                return None
            async for line in reply.aiter_lines():
                if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                    continue
                events += 1
                if first is None:
                    first = time.perf_counter()
                if chunks is not None and events >= chunks:
                    break
    except httpx.HTTPError:
        return None
    ended = time.perf_counter()
    return ((first or ended) - started) * 1000, (ended - started) * 1000
