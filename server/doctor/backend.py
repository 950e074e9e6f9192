"""The doctor's backend checks: does it answer, which engine and model, a tiny completion's
round trip, and the tokenizer the server would count and send prompts with.

Each goes through the server's own code (the streaming client, the tokenizer lookup, the
tokenizer probe), so that what works here works for the editor too. The timeouts are
wider than a keystroke's: a CPU backend takes about a second a token.
"""

from __future__ import annotations

import logging
import time

from server.backend.client import (
    BackendError,
    BackendRefused,
    BackendTimeout,
    BackendUnreachable,
    CompletionBackend,
    CompletionRequest,
    ModelInfo,
    StreamStats,
    key_may_travel,
)
from server.backend.engines import TITLES, engine_of, takes_vllm_fields
from server.completion.prompt import choose_template
from server.completion.request import tokenizer_home
from server.completion.token_count import CHARS_PER_TOKEN, load_token_counter
from server.completion.tokenizer_check import compare_tokenizers
from server.config import Settings
from server.doctor.report import Check

PROBE_PROMPT = "def add(a, b):\n    return"
PROBE_TOKENS = 8
START_FIX = (
    "start the backend (`headstart backend start` runs vLLM on this machine), or point "
    "backend.url / HEADSTART_BACKEND_URL at a running vLLM or other OpenAI-compatible "
    "server (its base URL, ending in /v1)"
)


async def backend_checks(settings: Settings) -> list[Check]:
    """The backend the settings point at, from /v1/models to a streamed completion."""
    url, where = _backend_url(settings)
    if url is None:
        return [Check("backend", "FAIL", where, fix=START_FIX)]
    patient = settings.backend.model_copy(
        update={
            "url": url,
            "connect_timeout_ms": 3_000,
            "first_chunk_timeout_ms": 60_000,
            "chunk_gap_ms": 60_000,
            "total_timeout_ms": 120_000,
            "max_retries": 0,
        }
    )
    checks = []
    api_key = settings.api_key()
    if api_key and not key_may_travel(url):
        checks.append(
            Check(
                "backend",
                "WARN",
                f"the API key in ${settings.backend.api_key_env} is not sent to {url}",
                fix="keys go only over https or to this machine: use the backend's https URL",
            )
        )
    backend = CompletionBackend(patient, api_key=api_key)
    try:
        found = await _served_model(backend, url, where, settings)
        checks.append(found[0])
        if found[1] is not None:
            checks.append(await _round_trip(backend))
            checks.append(await _tokenizer(backend, settings, found[1]))
    finally:
        await backend.aclose()
    return checks


def _backend_url(settings: Settings) -> tuple[str | None, str]:
    """The URL to check and what it is; (None, why) when backend.mode local has none."""
    if settings.backend.mode == "remote":
        return settings.backend.url, f"{settings.backend.url} (backend.url)"
    from server.backend.process import backend_status

    status = backend_status()
    if status.state is None:
        return None, (
            "backend.mode is local and no local vLLM runs (an editor's server starts one on "
            "its first request; this checks one that runs)"
        )
    return status.state.url, f"{status.state.url} (the local vLLM, pid {status.state.pid})"


async def _served_model(
    backend: CompletionBackend, url: str, where: str, settings: Settings
) -> tuple[Check, ModelInfo | None]:
    try:
        models = await backend.list_models()
        model = await backend.model()
    except BackendUnreachable as exc:
        return Check("backend", "FAIL", f"{where} does not answer: {exc}", fix=START_FIX), None
    except BackendTimeout as exc:
        return Check("backend", "FAIL", f"{where} does not answer in time: {exc}"), None
    except BackendError as exc:
        return Check("backend", "FAIL", f"{where}: {exc}", fix=_fix_for(exc, settings)), None
    engine = engine_of(model.owned_by)
    what = TITLES[engine] if engine else f"an OpenAI-compatible server ({model.owned_by!r})"
    window = f" (window {model.max_model_len:,} tokens)" if model.max_model_len else ""
    served = ", ".join(m.id for m in models)
    if settings.backend.model and all(m.id != settings.backend.model for m in models):
        return (
            Check(
                "backend",
                "FAIL",
                f"{where} answers ({what}) but does not serve backend.model "
                f"{settings.backend.model!r}; it serves {served or 'nothing'}",
                fix="set backend.model (HEADSTART_MODEL) to one of those, or leave it unset",
            ),
            None,
        )
    summary = f"{where} answers: {what} serving {model.id}{window}"
    details = (f"all served models: {served}",) if len(models) > 1 else ()
    return Check("backend", "OK", summary, details=details), model


def _fix_for(error: BackendError, settings: Settings) -> str:
    text = str(error)
    if "HTTP 401" in text or "HTTP 403" in text:
        return (
            f"the backend wants an API key: put it in ${settings.backend.api_key_env} "
            "(backend.apiKeyEnv names the variable)"
        )
    if "HTTP 404" in text:
        return "backend.url is the API's base URL, ending in /v1 (…/v1/models must answer)"
    return START_FIX


async def _round_trip(backend: CompletionBackend) -> Check:
    """A tiny completion, streamed as a keystroke's is, and how long it took."""
    stats = StreamStats()
    request = CompletionRequest(prompt=PROBE_PROMPT, max_tokens=PROBE_TOKENS)
    text = ""
    try:
        async for piece in backend.stream(request, stats):
            text += piece
    except BackendRefused as exc:
        return Check("completion", "FAIL", f"the backend refused a completion: {exc}")
    except BackendError as exc:
        return Check("completion", "FAIL", f"a completion failed: {exc}", fix=START_FIX)
    total_ms = (time.perf_counter() - stats.started) * 1000
    first_ms = (stats.first_chunk or 0.0) * 1000
    summary = (
        f"a completion of up to {PROBE_TOKENS} tokens took {total_ms:.0f} ms (first chunk "
        f"{first_ms:.0f} ms), answer {text!r}"
    )
    if not text:
        return Check("completion", "WARN", summary, fix="the backend answered with no text")
    return Check("completion", "OK", summary)


async def _tokenizer(backend: CompletionBackend, settings: Settings, model: ModelInfo) -> Check:
    """The tokenizer.json the server would use for this model, and whether the backend's
    own tokenizer makes the same ids (vLLM's /tokenize)."""
    silent = logging.getLogger("server.completion")
    level = silent.level
    silent.setLevel(logging.ERROR)  # the findings go in the report, not as log lines
    try:
        counter = load_token_counter(settings.completion.tokenizer, tokenizer_home(model))
        template = choose_template(settings.completion.template, model.id, counter).family
        vllm_like = takes_vllm_fields(model.owned_by)  # the server checks these backends
        agreement = await compare_tokenizers(backend, counter) if vllm_like else "unknown"
    finally:
        silent.setLevel(level)
    prompt = f"prompt template {template}"
    if not counter.exact:
        return Check(
            "tokenizer",
            "WARN",
            f"no tokenizer.json found for {model.id}: token budgets are estimated at "
            f"{CHARS_PER_TOKEN} characters a token and prompts go as text; {prompt}",
            fix="set completion.tokenizer to the served model's tokenizer.json (or its "
            "folder), or keep the model in the Hugging Face cache",
        )
    if agreement == "different":
        return Check(
            "tokenizer",
            "FAIL",
            f"{counter.source} is not the backend's tokenizer (a probe's token ids differ): "
            "the server falls back to text prompts and estimated budgets",
            fix="set completion.tokenizer to the tokenizer.json of the model the backend serves",
        )
    checked = {
        "same": "the backend's own (its /tokenize makes the same ids)",
        "unknown": "not compared: the backend does not tokenize on request",
    }[agreement]
    return Check("tokenizer", "OK", f"{counter.source}, {checked}; {prompt}")
