"""The bench's floor sends a user's requests again as the server sent them, with a cache
salt of its own, and stops each stream where the server had its answer
(server/bench/floor.py), against the fake model over HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from fake_openai import FakeBackend

from server.backend.client import CompletionRequest, ModelInfo, Priority, request_body
from server.bench.floor import SALT_PREFIX, run_floor

ANSWER = "urn total\n" + "".join(f"    step_{n}()\n" for n in range(40))


def record(t: float, prompt: str, ms: float | None = None, **more: Any) -> dict[str, Any]:
    """A key's record as `server.bench.user` keeps it, with the server's request."""
    request = CompletionRequest(
        prompt=prompt,
        max_tokens=64,
        stop=["\n\n"],
        stop_token_ids=[151643],
        prompt_ids=[1, 2, 3],
        priority=Priority.KEYSTROKE,
        answer_prefix="ret",
    )
    return {"user": 0, "t": t, "ms": ms, "request": dataclasses.asdict(request), **more}


def test_the_floor_sends_the_servers_bodies_salted_and_stops_at_the_servers_answer(
    fake: FakeBackend,
) -> None:
    fake.script([{"match": "", "text": ANSWER, "chunk_chars": 2, "chunk_delay_ms": 5}])
    records = [
        record(1.0, "warm-up prompt", 40.0, chunks=4),  # before the step: sent, not measured
        record(2.0, "a key's prompt", 80.0, chunks=3),
        record(2.5, "a cached key", 3.0, cached=True),  # the server sent nothing for it
        record(3.0, "another key", 60.0, chunks=None),  # no count: read to the end
    ]
    figures = asyncio.run(run_floor(fake.url, fake.model, records, 2.0, limit=10))

    assert figures is not None
    assert (figures["prompts"], figures["warmup"], figures["salted"]) == (2, 1, True)
    events = fake.events()
    assert [e["body"]["prompt"] for e in events] == [[1, 2, 3]] * 3
    salts = {e["body"].pop("cache_salt") for e in events}
    assert len(salts) == 1 and salts.pop().startswith(SALT_PREFIX)
    model = ModelInfo(id=fake.model, owned_by="vllm", max_model_len=None)
    server_body = request_body(
        CompletionRequest(**{**records[1]["request"], "priority": Priority.KEYSTROKE}), model
    )
    assert events[1]["body"] == server_body  # the healing grammar and priority included
    assert "grammar" in server_body["structured_outputs"] and server_body["priority"] == 0
    stopped, whole = events[1], events[2]
    assert stopped["closed_by"] == "client" and stopped["chunks_sent"] < whole["chunks_sent"]
    assert whole["completed"]
    assert figures["answerMs"]["p50"] >= figures["ttftMs"]["p50"] > 0
    assert figures["serverMs"]["p50"] in (60.0, 80.0)
    assert figures["ratio"] == figures["serverMs"]["p50"] / figures["answerMs"]["p50"]


def test_a_user_with_no_model_request_in_the_step_has_no_floor(fake: FakeBackend) -> None:
    records = [record(1.0, "warm-up only", 40.0, chunks=2), record(2.0, "cached", 2.0, cached=True)]
    assert asyncio.run(run_floor(fake.url, fake.model, records, 2.0, limit=10)) is None
    assert fake.events() == []


def test_the_floor_leaves_out_what_the_servers_backend_refused(fake: FakeBackend) -> None:
    """A server whose backend refused ids, priority or the grammar sent text, no priority
    and the regex (server.backend.client): so does its floor."""
    fake.script([{"match": "", "text": ANSWER}])
    refused = {"tokenIds": False, "priority": False, "grammar": False}
    records = [record(1.0, "a key's prompt", 50.0, chunks=2, bodyFields=refused)]
    assert asyncio.run(run_floor(fake.url, fake.model, records, 1.0, limit=10)) is not None
    (event,) = fake.events()
    assert event["body"]["prompt"] == "a key's prompt" and "priority" not in event["body"]
    assert set(event["body"]["structured_outputs"]) == {"regex"}
