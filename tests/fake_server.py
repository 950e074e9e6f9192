"""The fake model's server: its endpoints (/v1/completions, /v1/models, /tokenize, /metrics,
and the control endpoints /_script, /_events, /_reset, /_connections) and how one
completion is answered, well or in the scripted way it should fail.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fake_engine import PrefillQueue
from fake_flavors import (
    ITL_NAMES,
    OWNED_BY,
    EngineStats,
    histogram_lines,
    metrics,
    refusal,
)
from fake_http import READ_SIZE, ClientWatch, Conn, Event, Request, compact_json, openai_error
from fake_oracle import Oracle
from fake_script import (
    BAD_BODY,
    CORRUPT_TEXT,
    GARBAGE_EVENTS,
    HUGE_LINE_BYTES,
    MAX_MODEL_LEN,
    STALL_CAP_S,
    BadRequest,
    Rule,
    Script,
)
from fake_tokens import load_tokenizer, plan_chunks, prompt_token_ids, token_id, token_text

log = logging.getLogger("fake_openai")


@dataclass
class CompletionRequest:
    """The fields of a /v1/completions body that the fake uses."""

    prompt: str | list[Any]
    match_text: str
    max_tokens: int | None
    stop: list[str]
    stream: bool
    model: str
    suffix: str | None
    include_usage: bool
    return_token_ids: bool = False
    generated: int = 0
    """Tokens at the end of a token-id prompt that the model generated: a resumed stream,
    which the fake continues where the earlier one was cut."""
    priority: int = 0
    """vLLM's priority-scheduling rank (lower first); 0 when absent or not an integer."""

    @classmethod
    def parse(cls, raw: bytes) -> tuple[Any, CompletionRequest]:
        """Validate like vLLM would (loosely); raises BadRequest with a readable message."""
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"request body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        prompt = body.get("prompt")
        generated = 0
        if isinstance(prompt, str):
            match_text = prompt
        elif isinstance(prompt, list) and all(
            isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in prompt
        ):
            pieces = [token_text(t) for t in prompt]
            match_text = "".join(text for text, _ in pieces)
            while generated < len(pieces) and pieces[len(pieces) - 1 - generated][1]:
                generated += 1
        elif isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            match_text = prompt[0]
        else:
            raise BadRequest("prompt must be a string, a list of token ids or [string]")
        max_tokens = body.get("max_tokens")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0
        ):
            raise BadRequest("max_tokens must be a non-negative integer or null")
        stop = body.get("stop") or []
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise BadRequest("stop must be a string or a list of strings")
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise BadRequest("stream must be a boolean")
        model = body.get("model", "")
        suffix = body.get("suffix")
        if not isinstance(model, str) or not (suffix is None or isinstance(suffix, str)):
            raise BadRequest("model and suffix must be strings")
        options = body.get("stream_options") or {}
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        return_ids = body.get("return_token_ids") is True
        priority = body.get("priority", 0)
        return body, cls(
            prompt,
            match_text,
            max_tokens,
            stop,
            stream,
            model,
            suffix,
            include_usage,
            return_ids,
            generated,
            priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        )


FORCED_START = re.compile(r"((?:[^\\\[]|\\.)*)\[\\s\\S\]\*")
"""The one regex shape the fake honours, `LITERAL[\\s\\S]*`: an answer starting with
LITERAL (what a healed prompt sends, server.backend.client.starting_with)."""

FORCED_START_GRAMMAR = re.compile(
    r'start: ("(?:[^"\\]|\\.)*") /\(\.\|\\n\)\*/ \((<\[\d+\]>(?: \| <\[\d+\]>)*)\)\?'
)
"""The one Lark grammar shape the fake honours (server.backend.client.healing_grammar):
a JSON string the answer starts with, anything, then optionally one of the end tokens."""


def forced_start(body: Mapping[str, Any]) -> str:
    """What an answer must start with under the request's constraint (vLLM's
    `structured_outputs.regex` or `.grammar`, SGLang's `regex`); "" without one. The
    fake's "model" then spells it first, as a constrained model would."""
    outputs = body.get("structured_outputs")
    if isinstance(outputs, dict) and "grammar" in outputs:
        grammar = outputs["grammar"]
        found = FORCED_START_GRAMMAR.fullmatch(grammar) if isinstance(grammar, str) else None
        if found is None:
            raise BadRequest(f"the fake honours only healing_grammar's shape, got {grammar!r}")
        return str(json.loads(found.group(1)))
    pattern = outputs.get("regex") if isinstance(outputs, dict) else body.get("regex")
    if pattern is None:
        return ""
    match = FORCED_START.fullmatch(pattern) if isinstance(pattern, str) else None
    if match is None:
        raise BadRequest(f"the fake honours only regexes LITERAL[\\s\\S]*, got {pattern!r}")
    return re.sub(r"\\(.)", r"\1", match.group(1))


def has_field(body: Mapping[str, Any], name: str) -> bool:
    """Whether the body holds the field `name`, dotted for nested ones
    (`structured_outputs.grammar`)."""
    value: Any = body
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    return True


class PrefixCache:
    """vLLM's automatic prefix caching, counted the way its /metrics counts it: a prompt's
    tokens in whole blocks that an earlier prompt began with the same way are hits."""

    BLOCK = 16

    def __init__(self) -> None:
        self.blocks: set[int] = set()
        self.queries = 0
        self.hits = 0

    def query(self, tokens: list[int], salt: object = None) -> int:
        """Count a prompt; the tokens it must compute (those not hit). A `cache_salt`
        starts its own chain, as in vLLM, so salted prompts share no blocks."""
        self.queries += len(tokens)
        hitting = True
        key = 0 if salt is None else hash(("salt", salt))
        hits = 0
        for end in range(self.BLOCK, len(tokens) + 1, self.BLOCK):
            key = hash((key, *tokens[end - self.BLOCK : end]))  # chained, as vLLM's block hashes
            if hitting and key in self.blocks:
                hits += self.BLOCK
            else:
                hitting = False
                self.blocks.add(key)
        self.hits += hits
        return len(tokens) - hits


class FakeServer:
    """Shared state (script, events, counters) plus the request handlers."""

    def __init__(
        self,
        model: str,
        api_key: str | None,
        default_text: str,
        flavor: str = "vllm",
        prefill: PrefillQueue | None = None,
        oracle: Oracle | None = None,
    ) -> None:
        self.model = model
        self.oracle = oracle
        """Answers where no script rule does, with the workspace's own text (fake_oracle.py)."""
        self.prefill = prefill
        """A compute-bound engine's prefill queue (fake_engine.py); None answers at once."""
        self.flavor = flavor
        """The engine it behaves like where they differ (fake_flavors.py)."""
        self.engine_stats = EngineStats()
        self.api_key = api_key
        self.launch_default_text = default_text
        self.script = Script([], default_text)
        self.events: list[Event] = []
        self.next_id = 1
        self.requests_total = 0
        self.completions_total = 0
        self.active_completions = 0
        self.tasks: set[asyncio.Task[Any]] = set()
        self.prefix_cache = PrefixCache()
        self.connections: set[Conn] = set()
        self.connections_opened = 0

    # ---- connection loop

    async def handle_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Serve requests on one connection until either side closes it."""
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)
        conn = Conn(reader, writer)
        self.connections.add(conn)
        self.connections_opened += 1
        try:
            while True:
                try:
                    request = await conn.read_request()
                except BadRequest as exc:
                    log.info("bad request: %s", exc.message)
                    await conn.send_json(
                        exc.status, openai_error(exc.message, code=exc.status), False
                    )
                    break
                if request is None:
                    break
                self.requests_total += 1
                conn.requests += 1
                try:
                    keep = await self.dispatch(conn, request)
                except BadRequest as exc:
                    log.info("%s %s -> %d %s", request.method, request.path, exc.status, exc)
                    keep = await conn.send_json(
                        exc.status, openai_error(exc.message, code=exc.status)
                    )
                if not (keep and request.keep_alive) or conn.aborted:
                    break
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            # Shutdown.  Python 3.11's start_server callback calls task.exception() on the
            # finished handler and logs a spurious traceback if it ended cancelled, so end
            # it normally: nothing awaits this top-level task.
            pass
        except Exception:  # a bug in the fake must not take the whole server down
            log.exception("handler crashed")
            conn.abort()
        finally:
            self.connections.discard(conn)
            if task is not None:
                self.tasks.discard(task)
            if not conn.aborted:
                writer.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def close_connections(self) -> None:
        """Cancel every connection task (shutdown)."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def dispatch(self, conn: Conn, req: Request) -> bool:
        """Route one request; returns whether the connection may be reused."""
        routes: dict[str, dict[str, Callable[[Conn, Request], Any]]] = {
            "/v1/completions": {"POST": self.completions},
            "/v1/models": {"GET": self.models},
            "/tokenize": {"POST": self.tokenize},
            "/health": {"GET": self.health},
            "/metrics": {"GET": self.metrics},
            "/prometheus/metrics": {"GET": self.metrics},
            "/_script": {"POST": self.set_script, "GET": self.get_script},
            "/_events": {"GET": self.get_events},
            "/_reset": {"POST": self.reset},
            "/_connections": {"GET": self.get_connections},
        }
        methods = routes.get(req.path.rstrip("/") or "/")
        if methods is None:
            raise BadRequest(f"no route {req.path!r}", 404)
        handler = methods.get(req.method)
        if handler is None:
            raise BadRequest(f"method {req.method} not allowed on {req.path}", 405)
        keep: bool = await handler(conn, req)
        if req.path != "/v1/completions":
            log.info("%s %s", req.method, req.path)
        return keep

    def authorized(self, req: Request) -> bool:
        """vLLM's --api-key check: a Bearer token on /v1 routes."""
        return self.api_key is None or req.headers.get("authorization") == (
            f"Bearer {self.api_key}"
        )

    # ---- simple endpoints

    async def models(self, conn: Conn, req: Request) -> bool:
        """GET /v1/models."""
        if not self.authorized(req):
            return await conn.send_json(401, openai_error("invalid API key", code=401))
        card = {
            "id": self.script.serve_model or self.model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": OWNED_BY[self.flavor],  # vllm: token ids and stop_token_ids accepted
            "root": self.script.serve_model or self.model,
            "max_model_len": MAX_MODEL_LEN,
        }
        return await conn.send_json(200, {"object": "list", "data": [card]})

    async def tokenize(self, conn: Conn, req: Request) -> bool:
        """POST /tokenize, as vLLM answers it, with the scripted tokenizer's ids."""
        if self.script.tokenizer is None:
            raise BadRequest(f"no route {req.path!r}", 404)
        try:
            body = json.loads(req.body)
            text, special = body["prompt"], body.get("add_special_tokens", True)
        except (ValueError, UnicodeDecodeError, KeyError, TypeError):
            raise BadRequest("a tokenize body is {prompt: str}") from None
        ids = load_tokenizer(self.script.tokenizer).encode(text, add_special_tokens=special).ids
        return await conn.send_json(
            200, {"count": len(ids), "max_model_len": MAX_MODEL_LEN, "tokens": ids}
        )

    async def health(self, conn: Conn, req: Request) -> bool:
        """GET /health."""
        return await conn.send_json(200, {})

    async def metrics(self, conn: Conn, req: Request) -> bool:
        """GET /metrics: a few Prometheus lines, enough to test a scraper, named and placed
        as the flavor's engine names and places them."""
        path = req.path.rstrip("/")
        if self.flavor != "vllm":
            cache = self.prefix_cache
            found = metrics(
                self.flavor, path, self.model, cache.queries, cache.hits, self.engine_stats
            )
            if found is None:
                raise BadRequest(f"no route {req.path!r}", 404)
            return await conn.send(200, found[0].encode(), found[1])
        if path != "/metrics":
            raise BadRequest(f"no route {req.path!r}", 404)
        lines = [
            "# TYPE fake_requests_total counter",
            f"fake_requests_total {self.requests_total}",
            "# TYPE fake_completion_requests_total counter",
            f"fake_completion_requests_total {self.completions_total}",
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{model_name="{self.model}"}} {self.active_completions}',
            f'vllm:num_requests_waiting{{model_name="{self.model}"}} {self.waiting}',
            "# TYPE vllm:prefix_cache_queries counter",
            f'vllm:prefix_cache_queries_total{{model_name="{self.model}"}} '
            f"{self.prefix_cache.queries}",
            "# TYPE vllm:prefix_cache_hits counter",
            f'vllm:prefix_cache_hits_total{{model_name="{self.model}"}} {self.prefix_cache.hits}',
            "# TYPE vllm:prompt_tokens counter",
            f'vllm:prompt_tokens_total{{model_name="{self.model}"}} {self.prefix_cache.queries}',
            f'vllm:generation_tokens_total{{model_name="{self.model}"}} '
            f"{self.engine_stats.generation_tokens}",
            f'vllm:request_success_total{{finished_reason="stop",model_name="{self.model}"}} '
            f"{self.engine_stats.finished}",
            *histogram_lines(
                "vllm:time_to_first_token_seconds", self.model, self.engine_stats.first_token_s
            ),
            *histogram_lines(ITL_NAMES["vllm"], self.model, self.engine_stats.token_gap_s),
        ]
        body = ("\n".join(lines) + "\n").encode()
        return await conn.send(200, body, "text/plain; version=0.0.4")

    async def set_script(self, conn: Conn, req: Request) -> bool:
        """POST /_script replaces the rules."""
        try:
            raw = json.loads(req.body)
        except (ValueError, UnicodeDecodeError):
            raise BadRequest("script body is not valid JSON") from None
        self.script = Script.from_json(raw, self.launch_default_text)
        if self.script.tokenizer is not None:
            try:  # now, so that /tokenize answers as fast as vLLM's
                load_tokenizer(self.script.tokenizer)
            except Exception as exc:
                raise BadRequest(f"cannot load tokenizer {self.script.tokenizer}: {exc}") from None
        return await conn.send_json(200, self.script.to_json())

    async def get_script(self, conn: Conn, req: Request) -> bool:
        """GET /_script shows the rules and how often each was used."""
        return await conn.send_json(200, self.script.to_json())

    async def get_events(self, conn: Conn, req: Request) -> bool:
        """GET /_events: one record per completion request, oldest first."""
        return await conn.send_json(200, [e.to_json() for e in self.events])

    async def get_connections(self, conn: Conn, req: Request) -> bool:
        """GET /_connections: connections accepted so far, open now, and open without
        a request ever sent on them (what a client's connection pool may leak)."""
        idle_from_birth = sum(1 for c in self.connections if c.requests == 0)
        counts = {
            "opened": self.connections_opened,
            "open": len(self.connections),
            "never_used": idle_from_birth,
        }
        return await conn.send_json(200, counts)

    async def reset(self, conn: Conn, req: Request) -> bool:
        """POST /_reset: forget events and rules (in-flight requests carry on unrecorded)."""
        self.events = []
        self.next_id = 1
        self.script = Script([], self.launch_default_text)
        return await conn.send_json(200, {})

    # ---- completions

    async def completions(self, conn: Conn, req: Request) -> bool:
        """POST /v1/completions: answer from the script, streaming or not."""
        self.completions_total += 1
        event = Event(id=self.next_id, received_at=time.time(), headers=dict(req.headers))
        self.next_id += 1
        self.events.append(event)
        authorized = self.authorized(req)
        creq: CompletionRequest | None = None
        try:
            body, creq = CompletionRequest.parse(req.body)
        except BadRequest:
            if authorized:
                event.behaviour, event.status = "bad_request", 400
                event.close("server")
                raise
        if creq is not None and self.script.tokenizer and isinstance(creq.prompt, list):
            # ids of the scripted (served) tokenizer, read as vLLM reads them: none of them
            # is one of the fake's own generated tokens
            served = load_tokenizer(self.script.tokenizer)
            text = served.decode(creq.prompt, skip_special_tokens=False)
            creq = dataclasses.replace(creq, match_text=text, generated=0)
        if creq is not None:
            event.prompt, event.max_tokens, event.stop = creq.prompt, creq.max_tokens, creq.stop
            event.model, event.stream, event.suffix = creq.model, creq.stream, creq.suffix
            event.body = body
        if not authorized or creq is None:
            event.behaviour, event.status = "unauthorized", 401
            event.close("server")
            log.info("POST /v1/completions -> 401")
            return await conn.send_json(401, openai_error("invalid API key", code=401))
        refused = [name for name in self.script.refuse_fields if has_field(body, name)]
        if refused:
            event.behaviour, event.status = "refused_field", 400
            event.close("server")
            log.info("POST /v1/completions -> 400 (refused %s)", refused)
            message = f"Unrecognized request argument supplied: {refused[0]}"
            if refused[0] == "structured_outputs.grammar":  # vLLM with the xgrammar backend
                message = "Failed to convert the grammar from Lark to EBNF. "
            return await conn.send_json(400, openai_error(message))
        if (why := refusal(self.flavor, body)) is not None:
            event.behaviour, event.status = "refused_field", 400
            event.close("server")
            log.info("POST /v1/completions -> 400 (%s refuses: %s)", self.flavor, why)
            return await conn.send_json(400, {"error": why})  # TensorRT-LLM's shape
        if self.script.refuse_token_ids and isinstance(body.get("prompt"), list):
            event.behaviour, event.status = "refused_token_ids", 400
            event.close("server")
            log.info("POST /v1/completions -> 400 (token ids refused)")
            return await conn.send_json(400, openai_error("prompt must be a string"))
        served = self.script.serve_model
        if served is not None and creq.model != served:
            event.behaviour, event.status = "unknown_model", 404
            event.close("server")
            log.info("POST /v1/completions -> 404 (model %r; serving %r)", creq.model, served)
            message = f"The model `{creq.model}` does not exist."
            return await conn.send_json(404, openai_error(message, code=404))
        computed = self.prefix_cache.query(
            prompt_token_ids(creq.match_text), body.get("cache_salt")
        )
        index, rule = self.script.pick(creq.match_text)
        if index is None and self.oracle is not None:
            truth = self.oracle.answer(creq.match_text)
            rule = rule if truth is None else Rule(text=truth)
        try:
            forced = forced_start(body)
        except BadRequest as exc:
            event.behaviour, event.status = "bad_request", 400
            event.close("server")
            return await conn.send_json(400, openai_error(str(exc)))
        if forced and not rule.text.startswith(forced) and not self.script.ignore_constraints:
            rule = dataclasses.replace(rule, text=forced + rule.text)
        event.rule_index, event.behaviour = index, rule.behaviour
        log.info(
            "POST /v1/completions #%d stream=%s rule=%s behaviour=%s",
            event.id,
            creq.stream,
            index,
            rule.behaviour,
        )
        self.active_completions += 1
        watch = ClientWatch(conn, event)
        try:
            reply = Completion(self, conn, event, rule, creq, watch, computed)
            if creq.stream:
                return await reply.stream()
            return await reply.whole()
        finally:
            self.active_completions -= 1
            await watch.stop()
            if event.closed_by is None:  # e.g. the write failed before the watcher noticed
                event.close("client" if watch.gone.is_set() else "server")
            self._count(event)

    @property
    def waiting(self) -> int:
        """Requests waiting for their prefill (vLLM's num_requests_waiting)."""
        return 0 if self.prefill is None else self.prefill.waiting

    def _count(self, event: Event) -> None:
        """An engine's counters for one finished completion."""
        stats = self.engine_stats
        if event.first_chunk_at is not None:
            stats.first_token_s.append(event.first_chunk_at - event.received_at)
        if event.first_chunk_at is not None and event.closed_at and event.chunks_sent > 1:
            gap = (event.closed_at - event.first_chunk_at) / (event.chunks_sent - 1)
            stats.token_gap_s.append(gap)
        stats.generation_tokens += event.chunks_sent
        if event.completed:
            stats.finished += 1


class Completion:
    """Plays one rule for one request, stream or not; every wait also watches the client."""

    def __init__(
        self,
        server: FakeServer,
        conn: Conn,
        event: Event,
        rule: Rule,
        creq: CompletionRequest,
        watch: ClientWatch,
        computed: int = 0,
    ) -> None:
        self.server = server
        self.computed = computed
        """The prompt tokens not in the prefix cache, which a loaded engine must prefill."""
        self.conn = conn
        self.event = event
        self.rule = rule
        self.creq = creq
        self.watch = watch
        self.created = int(time.time())
        skip = creq.generated
        budget = None if creq.max_tokens is None else creq.max_tokens + skip
        chunks, self.finish = plan_chunks(rule.text, creq.stop, budget, rule.chunk_chars)
        self.chunks = chunks[skip:]

    def usage(self) -> dict[str, Any]:
        """Token counts, with one 'token' per chunk (and ~4 chars per prompt token), and the
        prompt tokens its prefix cache held, as vLLM with --enable-prompt-tokens-details
        says them."""
        prompt = self.creq.prompt
        prompt_tokens = len(prompt) if isinstance(prompt, list) else (len(prompt) + 3) // 4
        done = self.event.chunks_sent
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": done,
            "total_tokens": prompt_tokens + done,
            "prompt_tokens_details": {"cached_tokens": max(0, prompt_tokens - self.computed)},
        }

    def choice(self, text: str, finish: str | None, first: bool = False) -> dict[str, Any]:
        """One choice object; with return_token_ids, one token per chunk, as vLLM sends
        them (the prompt's ids in the first chunk only)."""
        choice: dict[str, Any] = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": finish,
        }
        if self.creq.return_token_ids:
            choice["token_ids"] = [token_id(text, True)] if text else []
            if first:
                prompt = self.creq.prompt
                ids = prompt if isinstance(prompt, list) else prompt_token_ids(prompt)
                choice["prompt_token_ids"] = ids
        return choice

    def envelope(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        """The fields around the choices in every completion object."""
        return {
            "id": f"cmpl-{self.event.id}",
            "object": "text_completion",
            "created": self.created,
            "model": self.server.model,
            "choices": choices,
        }

    async def prefilled(self) -> bool:
        """Wait for the prompt's turn in a compute-bound engine's prefill queue, if the
        fake has one; False when the client left first (vLLM aborts it unserved)."""
        prefill = self.server.prefill
        if prefill is None or self.rule.behaviour != "normal":
            return True
        priority = self.creq.priority
        return await prefill.prefill(self.computed, priority, self.watch.gone)

    async def http_500(self) -> bool:
        """Reply 500 (after first_delay_ms) like an overloaded or crashed backend."""
        if await self.watch.sleep(self.rule.first_delay_ms / 1000):
            return False
        self.event.status = 500
        self.event.close("server")
        error = openai_error("fake internal server error", "internal_server_error", 500)
        return await self.conn.send_json(500, error)

    async def stall(self) -> bool:
        """Send nothing more; wait for the client to leave (or STALL_CAP_S for 'stall')."""
        cap = None if self.rule.behaviour == "stall_forever" else STALL_CAP_S
        if not await self.watch.sleep(cap):
            self.event.close("server")
        return False

    def drop(self) -> bool:
        """Reset the connection mid-response."""
        self.event.close("server")
        self.conn.abort()
        return False

    async def whole(self) -> bool:
        """stream=false: wait as long as streaming would have taken, then one JSON body."""
        rule = self.rule
        if rule.behaviour == "http_500":
            return await self.http_500()
        if rule.behaviour in ("stall", "stall_forever"):
            return await self.stall()
        if not await self.prefilled():
            return False
        n = len(self.chunks)
        delay = rule.first_delay_ms + rule.chunk_delay_ms * max(n - 1, 0)
        if await self.watch.sleep(delay / 1000):
            return False
        if rule.behaviour == "drop":
            return self.drop()
        self.event.close("server")
        if rule.behaviour == "bad_json_body":
            return await self.conn.send(200, BAD_BODY, "application/json")
        if rule.behaviour == "garbage":
            return await self.conn.send(200, b'{"choices": 5}', "application/json")
        self.event.first_chunk_at = time.time()
        self.event.chunks_sent = n
        self.event.text = "".join(self.chunks)
        body = self.envelope([self.choice(self.event.text, self.finish)])
        body["usage"] = self.usage()
        self.event.completed = await self.conn.send_json(200, body)
        return self.event.completed

    async def sse(self, payload: bytes) -> bool:
        """One SSE event as one HTTP chunk, flushed."""
        return await self.conn.write(b"%x\r\n%s\r\n" % (len(payload), payload))

    async def data(self, obj: object) -> bool:
        """One ``data: JSON`` event."""
        return await self.sse(b"data: " + compact_json(obj) + b"\n\n")

    async def stream(self) -> bool:
        """stream=true: SSE over chunked transfer encoding, one flush per event."""
        rule, event = self.rule, self.event
        if rule.behaviour == "http_500":
            return await self.http_500()
        head = [
            ("Content-Type", "text/event-stream; charset=utf-8"),
            ("Cache-Control", "no-cache"),
            ("Transfer-Encoding", "chunked"),
            ("X-Request-Id", f"cmpl-{event.id}"),
        ]
        if not await self.conn.send_head(200, head, keep_alive=True):
            return False
        if not await self.prefilled():  # headers first, as vLLM's streaming response
            return False
        if rule.behaviour == "bad_json_body":
            if await self.watch.sleep(rule.first_delay_ms / 1000):
                return False
            event.close("server")
            return await self.sse(BAD_BODY) and await self.conn.write(b"0\r\n\r\n")
        if rule.behaviour == "html_200":  # a proxy's error page, sent as a 200 stream
            event.close("server")
            page = b"<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n"
            return await self.sse(page) and await self.conn.write(b"0\r\n\r\n")
        if rule.behaviour == "huge_line":  # one event that never ends, in 1 MB pieces
            if not await self.sse(b'data: {"choices": [{"index": 0, "text": "'):
                return False
            piece = b"x" * (1 << 20)
            for _ in range(HUGE_LINE_BYTES >> 20):
                if not await self.sse(piece):
                    return False
            return await self.stall()
        if rule.behaviour == "bad_utf8":
            invalid = b'{"choices": [{"index": 0, "text": "ok \xff\xfe", "finish_reason": null}]}'
            if not await self.sse(b"data: " + invalid + b"\n\n"):
                return False
            return await self.stall()
        if rule.behaviour == "endless":  # the rule's chunks again and again, never [DONE]
            while True:
                for chunk in self.chunks or ["x"]:
                    if await self.watch.sleep(rule.chunk_delay_ms / 1000):
                        return False
                    if not await self.data(self.envelope([self.choice(chunk, None)])):
                        return False
                    event.chunks_sent += 1
        if rule.behaviour == "empty":  # [DONE] after the delay, and no event before it
            if await self.watch.sleep(rule.first_delay_ms / 1000):
                return False
            event.close("server")
            return await self.sse(b"data: [DONE]\n\n") and await self.conn.write(b"0\r\n\r\n")
        normal = rule.behaviour == "normal"
        count = len(self.chunks) if normal else min(rule.after_chunks, len(self.chunks))
        for i in range(count):
            delay = rule.first_delay_ms if i == 0 else rule.chunk_delay_ms
            if await self.watch.sleep(delay / 1000):
                return False
            last = normal and i == len(self.chunks) - 1
            choice = self.choice(self.chunks[i], self.finish if last else None, first=i == 0)
            if not await self.data(self.envelope([choice])):
                return False
            if event.first_chunk_at is None:
                event.first_chunk_at = time.time()
            event.chunks_sent += 1
            event.text += self.chunks[i]
        if count == 0 and await self.watch.sleep(rule.first_delay_ms / 1000):
            return False
        if rule.behaviour == "drop":
            return self.drop()
        if rule.behaviour == "corrupt":
            if not await self.data(self.envelope([self.choice(CORRUPT_TEXT, None)])):
                return False
            event.text += CORRUPT_TEXT
            return await self.stall()
        if rule.behaviour in ("stall", "stall_forever"):
            return await self.stall()
        if rule.behaviour == "garbage":
            for payload in GARBAGE_EVENTS:
                if not await self.sse(payload):
                    return False
        elif not self.chunks and not await self.data(self.envelope([self.choice("", self.finish)])):
            return False
        if normal and self.creq.include_usage:
            usage = self.envelope([])
            usage["usage"] = self.usage()
            if not await self.data(usage):
                return False
        # Recorded before [DONE] goes out: a client may hang up the moment it reads it.
        event.completed = normal
        event.close("server")
        return await self.sse(b"data: [DONE]\n\n") and await self.conn.write(b"0\r\n\r\n")


async def _exit_on_stdin_eof(stop: asyncio.Event) -> None:
    """End the server when the parent process goes away (its end of our stdin closes)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    with contextlib.suppress(OSError):
        while await reader.read(READ_SIZE):
            pass
    stop.set()


async def serve(args: argparse.Namespace) -> int:
    """Start the server, print the port, run until SIGTERM/SIGINT."""
    prefill = None if args.prefill_tokens_per_s is None else PrefillQueue(args.prefill_tokens_per_s)
    oracle = None
    if args.oracle is not None:
        oracle = Oracle(Path(args.oracle), args.oracle_right, args.default_text)
    fake = FakeServer(args.model, args.api_key, args.default_text, args.flavor, prefill, oracle)
    if args.script:
        raw = json.loads(Path(args.script).read_text())
        fake.script = Script.from_json(raw, args.default_text)
    server = await asyncio.start_server(fake.handle_connection, args.host, args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on {args.host}:{port}", flush=True)
    log.info("fake OpenAI server for model %r on %s:%d", args.model, args.host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    watchers: list[asyncio.Task[None]] = []
    if args.exit_on_stdin_eof:
        watchers.append(asyncio.create_task(_exit_on_stdin_eof(stop)))
    await stop.wait()
    log.info("shutting down")
    for task in watchers:
        task.cancel()
    server.close()
    await fake.close_connections()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(server.wait_closed(), 2.0)
    return 0
