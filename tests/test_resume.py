"""The resume tiers against the misbehaving fake model, over real HTTP."""

from __future__ import annotations

import pytest
from fake_openai import FakeBackend
from fake_script import CORRUPT_TEXT
from fake_server import forced_start

from server.backend.client import (
    BackendError,
    BackendRefused,
    CompletionBackend,
    CompletionRequest,
    StreamStats,
)
from server.backend.resume import ResumePolicy, checksum, first_corrupt, resumable_stream
from server.config import BackendSettings

TEXT = "total = 0\nfor item in items:\n    total += item.price\nreturn total\n"
PROMPT = "def price(items):\n    <resume-test>"


async def finish(fake: FakeBackend, policy: ResumePolicy) -> tuple[str, StreamStats]:
    backend = CompletionBackend(
        BackendSettings(url=fake.url, first_chunk_timeout_ms=1000, chunk_gap_ms=300)
    )
    stats = StreamStats()
    text = ""
    try:
        async for snapshot in resumable_stream(
            backend, CompletionRequest(PROMPT, max_tokens=64), policy, stats
        ):
            text = snapshot
    finally:
        await backend.aclose()
    return text, stats


async def test_a_drop_is_resumed_from_token_ids_with_the_overlap_verified(
    fake: FakeBackend,
) -> None:
    fake.script(
        [
            {
                "match": "<resume-test>",
                "text": TEXT,
                "behaviour": "drop",
                "after_chunks": 9,
                "times": 1,
            },
            {"match": "<resume-test>", "text": TEXT},
        ]
    )
    text, stats = await finish(fake, ResumePolicy(backoff_ms=0, overlap_tokens=4))
    assert text == TEXT and stats.resumes == 1
    _, second = fake.events()
    assert isinstance(second["prompt"], list)
    # nine chunks came; four are regenerated as the overlap, five are kept in the prompt
    assert second["max_tokens"] == 64 - 5
    assert second["text"] == TEXT[5 * 4 :]


async def test_another_replica_answering_is_taken_from_the_last_verified_offset(
    fake: FakeBackend,
) -> None:
    other = "total = 0\nfor item in items:\n    total += item.cost\nreturn total\n"
    fake.script(
        [
            {
                "match": "<resume-test>",
                "text": TEXT,
                "behaviour": "drop",
                "after_chunks": 12,
                "times": 1,
            },
            {"match": "<resume-test>", "text": other},
        ]
    )
    text, _ = await finish(fake, ResumePolicy(backoff_ms=0, overlap_tokens=4))
    # 14 chunks came (56 characters); the 10 kept stay, the replica's text follows them
    assert text == TEXT[:40] + other[40:]


async def test_corrupt_text_is_rolled_back_before_it_and_regenerated(fake: FakeBackend) -> None:
    fake.script(
        [
            {
                "match": "<resume-test>",
                "text": TEXT,
                "behaviour": "corrupt",
                "after_chunks": 6,
                "times": 1,
            },
            {"match": "<resume-test>", "text": TEXT},
        ]
    )
    text, stats = await finish(
        fake, ResumePolicy(backoff_ms=0, overlap_tokens=1, min_valid_tokens=3)
    )
    assert text == TEXT and first_corrupt(text) is None and stats.resumes == 1
    second = fake.events()[1]
    # the corrupt chunk and at least min_valid_tokens before it are generated again
    assert second["max_tokens"] == 64 - 3
    assert CORRUPT_TEXT not in text


async def test_a_client_error_is_not_retried(fake: FakeBackend) -> None:
    backend = CompletionBackend(BackendSettings(url=fake.url))
    request = CompletionRequest(PROMPT, max_tokens=-1)  # the fake refuses it with 400
    try:
        with pytest.raises(BackendRefused) as refused:
            async for _ in resumable_stream(backend, request, ResumePolicy(backoff_ms=0)):
                pass
    finally:
        await backend.aclose()
    assert refused.value.status == 400
    assert len(fake.events()) == 1


async def test_retries_end_after_the_policy_s_count(fake: FakeBackend) -> None:
    fake.script([{"match": "<resume-test>", "behaviour": "http_500"}])
    with pytest.raises(BackendRefused):
        await finish(fake, ResumePolicy(max_retries=2, backoff_ms=1))
    assert len(fake.events()) == 3


def test_the_checksum_is_xxh3_of_the_utf8_text() -> None:
    import xxhash

    assert checksum("é✓") == xxhash.xxh3_64_intdigest("é✓".encode())
    assert first_corrupt("ok\ufffd") == 2 and first_corrupt("a\x00") == 1
    assert first_corrupt("tabs\tand\nform\x0cfeeds") is None


@pytest.mark.parametrize("forced", [TEXT[:3], TEXT[:24]])
async def test_a_resumed_healed_stream_is_asked_only_for_the_forced_characters_still_due(
    fake: FakeBackend, forced: str
) -> None:
    """Token healing made the answer start with `forced`: the resumed request continues
    after the kept text, so it must start with what of `forced` that text has not spelt."""
    fake.script(
        [
            {"match": "<resume-test>", "text": TEXT, "behaviour": "drop", "after_chunks": 9},
        ]
    )
    backend = CompletionBackend(
        BackendSettings(url=fake.url, first_chunk_timeout_ms=1000, chunk_gap_ms=300)
    )
    request = CompletionRequest(PROMPT, max_tokens=64, answer_prefix=forced)
    policy = ResumePolicy(max_retries=1, backoff_ms=0, overlap_tokens=4)
    try:
        with pytest.raises(BackendError):
            async for _ in resumable_stream(backend, request, policy, StreamStats()):
                pass
    finally:
        await backend.aclose()
    first, second = fake.events()[:2]
    assert forced_start(first["body"]) == forced
    kept = TEXT[: 5 * 4]  # nine chunks came; four are regenerated as the overlap
    assert forced_start(second["body"]) == forced[len(kept) :]
