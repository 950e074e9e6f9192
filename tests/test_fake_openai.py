"""Tests of the fake OpenAI server itself, so end-to-end tests can trust what it does."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # works with or without tests/__init__

from fake_openai import FakeBackend, FakeBackendError
from fake_tokens import plan_chunks, prompt_token_ids

from server.bench.stats import parse_metrics


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0, trust_env=False) as c:
        yield c


def body(prompt: Any = "x", **kw: Any) -> dict[str, Any]:
    return {"model": "fake-coder", "prompt": prompt, "max_tokens": 64, "stream": True, **kw}


def parse_sse(lines: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """The JSON events and whether [DONE] came."""
    events, done = [], False
    for line in lines:
        if line == "data: [DONE]":
            done = True
        elif line.startswith("data: "):
            events.append(json.loads(line[6:]))
    return events, done


def stream(client: httpx.Client, fake: FakeBackend, **kw: Any) -> list[str]:
    with client.stream("POST", f"{fake.url}/completions", json=body(**kw)) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return [line for line in r.iter_lines() if line]


def test_plan_chunks() -> None:
    assert plan_chunks("abcdefghij", [], None, 4) == (["abcd", "efgh", "ij"], "stop")
    assert plan_chunks("abcdefghij", ["gh", "cd"], None, 4) == (["ab"], "stop")
    assert plan_chunks("abcdefghij", ["zz"], 2, 4) == (["abcd", "efgh"], "length")
    # "i" would come in the third token, past max_tokens: vLLM never sees it
    assert plan_chunks("abcdefghij", ["i"], 2, 4) == (["abcd", "efgh"], "length")
    assert plan_chunks("abcdefghij", ["h"], 2, 4) == (["abcd", "efg"], "stop")
    assert plan_chunks("abcdefghij", ["fgh", "e"], None, 4) == (["abcd"], "stop")
    assert plan_chunks("", ["x"], 0, 4) == ([], "stop")


def test_models_health_metrics(fake: FakeBackend, client: httpx.Client) -> None:
    models = client.get(f"{fake.url}/models").json()
    assert models["object"] == "list"
    assert models["data"][0]["id"] == "fake-coder"
    assert models["data"][0]["max_model_len"] == 4096
    assert client.get(f"{fake.base_url}/health").json() == {}
    metrics = client.get(f"{fake.base_url}/metrics").text
    assert "fake_requests_total " in metrics


def test_stream_stop_strings(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"match": "def f", "text": "return 1\n# trailing\nmore", "chunk_chars": 3}])
    lines = stream(client, fake, prompt="def f():\n    ", stop=["\n#", "zzz"], suffix="\n")
    events, done = parse_sse(lines)
    assert done and lines[-1] == "data: [DONE]"
    texts = [e["choices"][0]["text"] for e in events]
    assert texts == ["ret", "urn", " 1"]
    assert [e["choices"][0]["finish_reason"] for e in events] == [None, None, "stop"]
    assert {e["id"] for e in events} == {"cmpl-1"}
    assert events[0]["model"] == "fake-coder" and events[0]["object"] == "text_completion"
    (ev,) = fake.events()
    assert ev["prompt"] == "def f():\n    " and ev["stop"] == ["\n#", "zzz"]
    assert ev["suffix"] == "\n" and ev["max_tokens"] == 64 and ev["model"] == "fake-coder"
    assert ev["completed"] and ev["closed_by"] == "server" and ev["chunks_sent"] == 3
    assert ev["text"] == "return 1" and ev["first_chunk_at"] >= ev["received_at"]
    assert ev["headers"]["content-type"] == "application/json"


def test_stream_max_tokens_and_usage(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([], default_text="0123456789")
    lines = stream(client, fake, max_tokens=2, stream_options={"include_usage": True})
    events, done = parse_sse(lines)
    assert done
    assert [e["choices"][0]["text"] for e in events[:-1]] == ["0123", "4567"]
    assert events[1]["choices"][0]["finish_reason"] == "length"
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 2


def test_empty_text_still_sends_finish_reason(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"match": "", "text": "\n\nabc"}])
    events, done = parse_sse(stream(client, fake, stop=["\n\n"]))
    assert done and len(events) == 1
    assert events[0]["choices"][0] == {
        "index": 0,
        "text": "",
        "logprobs": None,
        "finish_reason": "stop",
    }


def test_non_stream_and_token_prompt(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"match": "", "text": "matched"}], default_text="default")
    prompt = prompt_token_ids("some prompt")
    r = client.post(f"{fake.url}/completions", json=body(prompt=prompt, stream=False))
    assert r.status_code == 200
    data = r.json()
    assert data["choices"][0]["text"] == "matched"
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["usage"]["prompt_tokens"] == 3 and data["usage"]["completion_tokens"] == 2
    fake.script([{"match": "nope", "text": "x"}])
    r = client.post(f"{fake.url}/completions", json=body(stream=False))
    assert r.json()["choices"][0]["text"] == "pass"  # the launch default
    assert fake.events()[-1]["rule_index"] is None


def test_stream_is_incremental(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"text": "aaaabbbbcccc", "first_delay_ms": 50, "chunk_delay_ms": 60}])
    start = time.monotonic()
    arrivals = []
    with client.stream("POST", f"{fake.url}/completions", json=body()) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                arrivals.append(time.monotonic() - start)
    assert len(arrivals) == 3
    assert arrivals[0] >= 0.045
    assert arrivals[2] - arrivals[0] >= 0.11  # not buffered until the end


def test_drop_breaks_stream(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"match": "", "text": "abcdefghijklmnop", "behaviour": "drop"}])
    got: list[str] = []
    with (
        pytest.raises(httpx.TransportError),
        client.stream("POST", f"{fake.url}/completions", json=body()) as r,
    ):
        for line in r.iter_lines():
            got.append(line)
    events, done = parse_sse([line for line in got if line])
    assert not done
    received = "".join(e["choices"][0]["text"] for e in events)
    assert "abcdefghijklmnop".startswith(received)
    (ev,) = fake.events()
    assert ev["closed_by"] == "server" and not ev["completed"] and ev["chunks_sent"] == 2


def test_stall_records_client_close_promptly(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"text": "abcdefgh", "behaviour": "stall", "after_chunks": 1}])
    with client.stream("POST", f"{fake.url}/completions", json=body()) as r:
        lines = r.iter_lines()
        first = next(line for line in lines if line)
        assert json.loads(first[6:])["choices"][0]["text"] == "abcd"
        time.sleep(0.1)  # the server is stalling now
        assert fake.events()[0]["closed_by"] is None
        closed = time.time()
        r.close()
    (ev,) = fake.wait_for(lambda evs: evs[0]["closed_by"] is not None, timeout=1.0)
    assert ev["closed_by"] == "client" and not ev["completed"] and ev["chunks_sent"] == 1
    assert 0 <= ev["closed_at"] - closed < 0.05


def test_first_delay_client_close_promptly(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"text": "abcd", "first_delay_ms": 5000}])
    with client.stream("POST", f"{fake.url}/completions", json=body()) as r:
        assert r.status_code == 200  # headers come before the delay
        time.sleep(0.05)
        closed = time.time()
    (ev,) = fake.wait_for(lambda evs: evs[0]["closed_by"] is not None, timeout=1.0)
    assert ev["closed_by"] == "client" and ev["chunks_sent"] == 0
    assert ev["first_chunk_at"] is None
    assert 0 <= ev["closed_at"] - closed < 0.05


def test_http_500_and_times(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script(
        [
            {"match": "go", "behaviour": "http_500", "times": 1},
            {"match": "go", "text": "ok"},
        ]
    )
    r = client.post(f"{fake.url}/completions", json=body(prompt="go"))
    assert r.status_code == 500
    assert r.json()["error"]["type"] == "internal_server_error"
    events, done = parse_sse(stream(client, fake, prompt="go"))
    assert done and events[0]["choices"][0]["text"] == "ok"
    evs = fake.events()
    assert [e["behaviour"] for e in evs] == ["http_500", "normal"]
    assert [e["status"] for e in evs] == [500, 200]
    assert [e["rule_index"] for e in evs] == [0, 1]


def test_garbage(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"text": "abcdefghijkl", "behaviour": "garbage", "after_chunks": 1}])
    lines = stream(client, fake)
    assert lines[0].startswith("data: {") and json.loads(lines[0][6:])["choices"][0]["text"]
    assert lines[1:] == [
        "data: {not json",
        'data: {"choices": 5}',
        "this line has no data prefix",
        "data: [DONE]",
    ]
    r = client.post(f"{fake.url}/completions", json=body(stream=False))
    assert r.status_code == 200 and r.json() == {"choices": 5}


def test_bad_json_body(fake: FakeBackend, client: httpx.Client) -> None:
    fake.script([{"behaviour": "bad_json_body"}])
    r = client.post(f"{fake.url}/completions", json=body(stream=False))
    assert r.status_code == 200 and r.text == "<html>oops</html>"
    r = client.post(f"{fake.url}/completions", json=body())
    assert r.status_code == 200 and r.text == "<html>oops</html>"


def test_malformed_requests_get_400(fake: FakeBackend, client: httpx.Client) -> None:
    with socket.create_connection((fake.host, fake.port), timeout=2) as s:
        s.sendall(b"NONSENSE\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 400 ")
    r = client.post(f"{fake.url}/completions", content=b"{not json")
    assert r.status_code == 400 and "error" in r.json()
    r = client.post(f"{fake.url}/completions", json={"prompt": {"a": 1}})
    assert r.status_code == 400
    assert client.get(f"{fake.base_url}/nowhere").status_code == 404
    with pytest.raises(FakeBackendError, match="behaviour"):
        fake.script([{"behaviour": "explode"}])
    with pytest.raises(FakeBackendError, match="unknown rule field"):
        fake.script([{"txt": "typo"}])
    assert client.get(f"{fake.base_url}/health").status_code == 200


def test_api_key() -> None:
    with (
        FakeBackend(api_key="sekrit", model="m2") as fake,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):
        url = f"{fake.url}/completions"
        r = client.post(url, json=body(stream=False))
        assert r.status_code == 401
        assert r.json()["error"]["type"] == "invalid_request_error"
        r = client.post(url, json=body(stream=False), headers={"Authorization": "Bearer nope"})
        assert r.status_code == 401
        r = client.post(url, json=body(stream=False), headers={"Authorization": "Bearer sekrit"})
        assert r.status_code == 200 and r.json()["model"] == "m2"
        evs = fake.events()
        assert [e["status"] for e in evs] == [401, 401, 200]
        assert evs[2]["headers"]["authorization"] == "Bearer sekrit"
        assert fake.stop() == 0  # SIGTERM is a clean exit
        assert "shutting down" in fake.stderr_text()


def test_startup_failure_is_reported() -> None:
    with pytest.raises(FakeBackendError, match="failed to start"):
        FakeBackend(extra_args=["--no-such-flag"]).start()


def engine_metrics(fake: FakeBackend) -> dict[str, Any]:
    """The fake's /metrics as the bench reads vLLM's."""
    return parse_metrics(httpx.get(f"{fake.base_url}/metrics", trust_env=False).text)


def stream_alone(fake: FakeBackend, **kw: Any) -> list[str]:
    with httpx.Client(timeout=10.0, trust_env=False) as client:
        return stream(client, fake, **kw)


def test_a_loaded_engine_prefills_by_priority_and_drops_prompts_left_waiting() -> None:
    """--prefill-tokens-per-s: prompts wait for one prefill queue, a lower priority value
    first; a request whose client leaves while it waits is never served; a salted prompt
    shares no cached blocks with an unsalted one."""
    busy = "a" * 16_000  # 4,000 prompt tokens: two seconds of prefill at 2,000 a second
    with FakeBackend(extra_args=["--prefill-tokens-per-s", "2000"]) as fake:
        fake.script([{"text": "ok"}])
        with ThreadPoolExecutor(3) as pool:
            first = pool.submit(stream_alone, fake, prompt=busy)
            fake.wait_for(lambda evs: len(evs) == 1)
            prefetch = pool.submit(stream_alone, fake, prompt="b" * 400, priority=2)
            fake.wait_for(lambda evs: len(evs) == 2)
            left_url = f"{fake.url}/completions"
            with (
                httpx.Client(timeout=10.0, trust_env=False) as client,
                client.stream("POST", left_url, json=body("d" * 400)) as r,
            ):
                assert r.status_code == 200  # headers before the prefill, as vLLM
                fake.wait_for(lambda evs: len(evs) == 3)
                assert engine_metrics(fake)["queue"] == 2
            keystroke = pool.submit(stream_alone, fake, prompt="c" * 400, priority=0)
            for future in (first, prefetch, keystroke):
                assert parse_sse(future.result(timeout=20))[1]
        served = {e["prompt"][0]: e for e in fake.events()}
        assert served["c"]["first_chunk_at"] < served["b"]["first_chunk_at"]
        assert served["a"]["first_chunk_at"] < served["c"]["first_chunk_at"]
        left = served["d"]
        assert left["closed_by"] == "client" and left["chunks_sent"] == 0
        assert engine_metrics(fake)["queue"] == 0

        hits = engine_metrics(fake)["counters"]["prefix_cache_hits"]
        stream_alone(fake, prompt=busy, cache_salt="user-2")
        assert engine_metrics(fake)["counters"]["prefix_cache_hits"] == hits
        stream_alone(fake, prompt=busy)
        assert engine_metrics(fake)["counters"]["prefix_cache_hits"] == hits + 4000


def test_the_oracle_answers_with_what_follows_the_cursor_in_the_file(tmp_path: Path) -> None:
    """--oracle DIR: the text after the typed part of the line, from the prompt's file, at
    the places drawn right (all of them with --oracle-right 1; none with 0, where the
    default text answers after the truth's first words); a script rule still comes first."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "cart.py").write_text(
        "def total(items):\n    return sum(item.price for item in items)\n"
    )
    prompt = (
        "<|repo_name|>shop\n<|file_sep|>pkg/other.py\nx = 1\n<|file_sep|>pkg/cart.py\n"
        "<|fim_prefix|>def total(items):\n    return sum(item.<|fim_suffix|>\n<|fim_middle|>"
    )

    def answer(right: str, rule: bool = False) -> str:
        args = ["--oracle", str(tmp_path), "--oracle-right", right, "--default-text", "oops"]
        with FakeBackend(extra_args=args) as fake:
            if rule:
                fake.script([{"match": "item.", "text": "scripted"}])
            events, _ = parse_sse(stream_alone(fake, prompt=prompt, stop=["\n"]))
            return "".join(event["choices"][0]["text"] for event in events)

    truth = "price for item in items)"
    assert answer("1") == truth
    wrong = answer("0")  # the truth's first 0-4 words, then its own way
    assert wrong.endswith("oops") and truth.startswith(wrong.removesuffix("oops"))
    assert answer("1", rule=True) == "scripted"
    elsewhere = prompt.replace("pkg/cart.py", "pkg/missing.py")
    with FakeBackend(extra_args=["--oracle", str(tmp_path), "--default-text", "oops"]) as fake:
        events, _ = parse_sse(stream_alone(fake, prompt=elsewhere))
        assert "".join(event["choices"][0]["text"] for event in events) == "oops"
