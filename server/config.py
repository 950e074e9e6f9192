"""Headstart's settings: one pydantic model, fed by initializationOptions, the `headstart`
workspace configuration section and environment variables (which win).

Keys are camelCase on the wire (as editors write them) and snake_case in Python. A bad
update is rejected as a whole with a message naming each bad field; the caller keeps the
last good value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

ENV_OVERRIDES: dict[str, tuple[str, ...]] = {
    "HEADSTART_BACKEND_URL": ("backend", "url"),
    "HEADSTART_MODEL": ("backend", "model"),
    "HEADSTART_BACKEND_MODE": ("backend", "mode"),
    "HEADSTART_LOCAL_MODEL": ("backend", "local", "model"),
    "HEADSTART_CACHE_DIR": ("cacheDir",),
    "HEADSTART_LOG_FILE": ("log", "file"),
    "HEADSTART_LOG_LEVEL": ("log", "level"),
    "HEADSTART_LOG_STATS_INTERVAL_S": ("log", "statsIntervalS"),
}
"""Environment variables that override a setting, and the path of the setting they set."""


class _Section(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


Engine = Literal["vllm", "sglang", "trtllm"]
"""The serving engines `headstart backend start` can run (server.backend.engines)."""


class LocalBackendSettings(_Section):
    """The vLLM that `backend.mode: local` starts on this machine (server.backend.process).

    One such vLLM serves every editor window of the user: whichever server (or
    `headstart backend start`) comes first starts it, the others find it in the state file.
    """

    model: str | None = Field(
        None,
        description="Model folder (or a name in the local Hugging Face cache) for vLLM to "
        "serve; 'dummy' = random weights with the real Qwen2.5 tokenizer, which only "
        "exercises the pipeline.",
    )
    served_model_name: str | None = Field(
        None, description="Name to serve the model under; null = the folder's name."
    )
    gpu_memory_utilization: float = Field(
        0.5, gt=0.0, le=0.95, description="Share of the GPU's memory vLLM may take."
    )
    max_model_len: int | None = Field(
        None,
        ge=256,
        le=1_048_576,
        description="Context length; null = what the completion and refactor budgets need.",
    )
    port: int = Field(0, ge=0, le=65_535, description="Port on 127.0.0.1; 0 = any free one.")
    startup_timeout_s: int = Field(
        900, ge=10, le=7_200, description="Longest wait for vLLM to load and answer."
    )
    extra_args: tuple[str, ...] = Field(
        (), description='More `vllm serve` arguments, e.g. ["--quantization", "fp8"].'
    )
    engine: Engine = Field(
        "vllm",
        description="The serving engine to start: vllm, sglang (python -m "
        "sglang.launch_server) or trtllm (trtllm-serve), each with its prefix cache, the "
        "context length and request priorities in its own flags. SGLang and TensorRT-LLM "
        "need an NVIDIA GPU.",
    )
    replicas: int = Field(
        1,
        ge=1,
        le=16,
        description="vLLMs to start; more than 1 puts vllm-router (pip install "
        "'headstart[router]') in front of them on `port`: one replica a GPU while there "
        "are GPUs enough, else they split gpuMemoryUtilization.",
    )


class BackendSettings(_Section):
    """Where completions come from: any OpenAI-compatible server (vLLM in production)."""

    mode: Literal["remote", "local"] = Field(
        "remote",
        description="remote: the server at `url`; local: the vLLM Headstart starts on this "
        "machine and shares between editor windows (`backend.local`).",
    )
    url: str = Field(
        "http://127.0.0.1:8000/v1",
        description="Base URL of the OpenAI-compatible API (remote mode).",
    )
    model: str | None = Field(
        None, description="Model name to request; null asks the server (/v1/models)."
    )
    api_key_env: str = Field(
        "HEADSTART_API_KEY", description="Environment variable that holds the API key."
    )
    connect_timeout_ms: int = Field(
        500, ge=50, le=30_000, description="TCP connect (and pool wait) limit."
    )
    first_chunk_timeout_ms: int = Field(
        2_000, ge=50, le=300_000, description="Longest wait for the first streamed chunk."
    )
    chunk_gap_ms: int = Field(
        800,
        ge=50,
        le=300_000,
        description="Longest silence between two streamed chunks before the stream is "
        "resumed (500-1200 suits a GPU; more for a slow CPU backend).",
    )
    max_retries: int = Field(
        3, ge=0, le=10, description="Resumes of a broken stream before giving up."
    )
    retry_backoff_ms: int = Field(
        50, ge=0, le=10_000, description="First wait before a resume; doubles, with jitter."
    )
    resume_overlap_tokens: int = Field(
        4, ge=1, le=64, description="Tokens a resumed stream regenerates to verify the splice."
    )
    min_valid_tokens: int = Field(
        3, ge=1, le=8, description="Tokens rolled back before corrupt output, at least."
    )
    total_timeout_ms: int = Field(
        6_000, ge=100, le=600_000, description="Longest a whole completion may take."
    )
    send_priority: bool = Field(
        True,
        description="Send each request's priority to vLLM (keystroke 0, refactoring 1, "
        "prefetch 2), so that a vLLM started with `--scheduling-policy priority` serves "
        "waiting keystrokes first. Turns itself off, with one log line, on a backend that "
        "refuses the field.",
    )
    prompt_token_ids: bool = Field(
        True,
        description="Send prompts to vLLM as token ids, made here with the model's "
        "tokenizer (when it is found), so that vLLM's API server does not tokenize every "
        "prompt again. Text prompts go to other backends and when no tokenizer is found.",
    )
    affinity: Literal["document", "workspace", "off"] = Field(
        "document",
        description="What a router in front of several vLLM replicas keeps together: each "
        "request carries `X-Session-ID`, a hash of its document's (or workspace's) name, "
        "that vllm-router's `consistent_hash` policy routes on, so one document's requests "
        "reach the replica whose prefix cache holds its prompt. off: no header.",
    )
    local: LocalBackendSettings = Field(default_factory=LocalBackendSettings)  # type: ignore[arg-type]

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")


TemplateName = Literal["auto", "qwen", "starcoder2", "deepseek", "codellama", "codestral"]
"""`completion.template`: "auto" (from the served model's name) or a family of
server.completion.prompt."""


class CompletionSettings(_Section):
    """How a suggestion is asked for and cut, and how its prompt is built."""

    max_tokens: int = Field(64, ge=1, le=2048, description="Token cap, single-line mode.")
    multiline_max_tokens: int = Field(128, ge=1, le=4096, description="Token cap, block mode.")
    max_lines: int = Field(12, ge=1, le=200, description="Line cap in block mode.")
    temperature: float = Field(
        0.0, ge=0.0, le=2.0, description="Sampling temperature; 0 is greedy."
    )
    prefetch: bool = Field(
        True,
        description="After a block suggestion, ask at once for the one that would follow "
        "its acceptance, so that it shows as soon as the block is accepted. While fewer "
        "than 2 of the last 10 prefetches were used, only one in 5 is sent.",
    )
    max_concurrent_requests: int = Field(
        16, ge=1, le=1024, description="Model requests in flight at once, all documents."
    )
    max_file_bytes: int = Field(
        2_000_000, ge=1_000, description="Larger documents get no completions."
    )
    reuse_typed_suggestions: bool = Field(
        True, description="Answer typing that follows a shown suggestion with its rest."
    )
    join_in_flight: bool = Field(
        True,
        description="A keystroke that only types on at the cursor of a model request still "
        "running waits for that request and shows the rest of its suggestion if the typed "
        "characters start it, instead of cancelling it and sending a request of its own "
        "(needs `reuseTypedSuggestions`).",
    )
    continue_in_background: bool = Field(
        True,
        description="After a one-line suggestion, keep its stream to the end of the block "
        "so that accepting the line is followed at once by the next.",
    )
    background_throttle_ms: int = Field(
        120,
        ge=0,
        le=60_000,
        description="Pause speculative work (`continueInBackground`, `prefetch`) while the "
        "model's first chunks take longer than this (the median of the last 8 requests), "
        "and resume once they are back under 70% of it; 0 = never pause.",
    )
    context_tokens_under_load: int = Field(
        2048,
        ge=0,
        le=131_072,
        description="Once `backgroundThrottleMs` pauses speculative work (the backend is "
        "overloaded), keystroke prompts get this token budget instead of `contextTokens`, "
        "until 32 requests after it resumed: a shared GPU runs out of prompt computation "
        "first, so a smaller prompt answered beats a full one that comes too late. 0, or "
        "at least `contextTokens`, keeps the full budget.",
    )
    languages: dict[str, bool] = Field(
        default_factory=lambda: {"*": True, "plaintext": False},
        description="Per languageId on/off; '*' is the default for the rest.",
    )

    template: TemplateName = Field(
        "auto", description="Prompt template family; auto = from the model name."
    )
    tokenizer: str | None = Field(
        None, description="tokenizer.json, or a model folder holding one, for token counts."
    )
    context_tokens: int = Field(
        4096, ge=64, le=131_072, description="Token budget of the whole prompt."
    )
    suffix_share: float = Field(0.1, ge=0.0, le=0.9, description="Most the suffix may take.")
    fim_suffix_tokens: int = Field(
        0,
        ge=0,
        le=16_384,
        description="Most tokens of the suffix kept after the cursor in the fill-in-the-middle "
        "slot, where every keystroke computes them again; the rest of it goes before the "
        "current file as a chunk of its own, which the backend's prefix cache keeps while "
        "typing. 0 keeps the whole suffix in the slot.",
    )
    cross_file_share: float = Field(
        0.4, ge=0.0, le=0.9, description="Most other files' snippets may take."
    )
    similar_code_share: float = Field(
        0.15,
        ge=0.0,
        le=0.5,
        description="Most code chunks from related files that read like the lines above "
        "the cursor (call sites of the same APIs) may take, out of the prefix's room; "
        "0 turns them off.",
    )

    similar_code_cursor_line: bool = Field(
        True,
        description="Whether the cursor's own line (the words typed on it so far) queries "
        "similar code, beside the lines above it; false makes the chunks change only when "
        "the cursor moves to another line, so typing along a line does not change the "
        "prompt before the current file (which the backend must then compute again).",
    )

    imports_share: float = Field(
        0.1,
        ge=0.0,
        le=0.3,
        description="Most the current file's import statements may take when the prefix "
        "is cut below them (a long file), out of the prefix's room; 0 turns them off.",
    )
    contract_share: float = Field(
        0.1,
        ge=0.0,
        le=0.3,
        description="Most an OpenAPI operation may take when the cursor is in a call to it "
        "(a request to a path of an OpenAPI document in the workspace, or a generated "
        "client's method named after its operationId): its parameters and schemas, taken "
        "off the total before the other shares; 0 turns it off.",
    )
    prompt_layout: Literal["auto", "cursor", "lineStart"] = Field(
        "auto",
        description="Where the fill-in-the-middle hole starts: at the cursor, or at the start "
        "of the cursor's line, the typed part of the line then coming after the middle "
        "marker, so every key typed on a line shares the prompt up to it (Qwen, StarCoder2 "
        "and DeepSeek templates; Codestral's already ends with the typed part). auto: "
        "lineStart with token healing where the backend can heal (a vLLM that takes the "
        "healing grammar, with the served model's tokenizer here), cursor otherwise: "
        "lineStart healed beat cursor on every repository task set, lineStart unhealed "
        "lost on all (docs/results.md#where-the-hole-starts-promptlayout-and-token-healing).",
    )
    token_healing: bool = Field(
        False,
        description="With `promptLayout` lineStart, back off the typed part's last token and "
        "make the model's answer start with its characters (vLLM structured outputs), so "
        "a word typed halfway is not forced to end at a token boundary. `promptLayout` "
        "auto turns it on where it lays prompts out lineStart.",
    )
    keep_snippets: bool = Field(
        True,
        description="Keep the snippets of the previous prompt while the cursor stays in a "
        "document, as long as they still fit, so the prompt before the current file stays "
        "in the backend's prefix cache; they are replaced when retrieval finds a definition "
        "of a name on the cursor's statement that they lack.",
    )
    window_step_lines: int = Field(
        8,
        ge=1,
        le=256,
        description="The current file's text before the cursor starts at a multiple of this "
        "many lines, so its start, and the prompt up to it, stays the same while the cursor "
        "moves within a step; larger steps keep it longer and show up to that many lines "
        "less.",
    )
    window_keep_tokens: int = Field(
        256,
        ge=0,
        le=4096,
        description="While the cursor stays in a document, the current file's text before "
        "the cursor keeps starting where it did for the previous request as long as that "
        "shows at most this many tokens less than starting afresh would and still fits; a "
        "move down that pushes it on leaves this much room, so the next few moves keep the "
        "new start. The prompt up to the cursor's line then stays in the backend's prefix "
        "cache over edits a screen apart. 0: every request places it afresh.",
    )

    @field_validator("tokenizer")
    @classmethod
    def _non_empty_path(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a path to tokenizer.json or a model folder, or null")
        return value

    @model_validator(mode="after")
    def _shares_fit(self) -> Self:
        total = self.suffix_share + self.cross_file_share
        if total > 0.9 + 1e-9:
            raise ValueError(
                "suffixShare + crossFileShare must leave at least 0.1 for the prefix, "
                f"got {self.suffix_share:g} + {self.cross_file_share:g} = {total:g}"
            )
        return self

    def enabled_for(self, language_id: str) -> bool:
        return self.languages.get(language_id, self.languages.get("*", True))


class RefactorSettings(_Section):
    """Model-backed refactor code actions (server.features.refactor)."""

    max_tokens: int = Field(
        2048, ge=16, le=16_384, description="Token cap of the model's rewritten code."
    )
    context_tokens: int = Field(
        6144, ge=256, le=131_072, description="Token budget of a refactor prompt."
    )
    timeout_ms: int = Field(
        60_000, ge=1_000, le=600_000, description="Longest a refactor generation may take."
    )
    max_lines: int = Field(400, ge=1, le=20_000, description="Longer targets are offered disabled.")


class ContractSettings(_Section):
    """OpenAPI documents open in the editor: diagnostics and generate actions
    (server.features.contracts, docs/aiapi.md "In the editor")."""

    diagnostics_delay_ms: int = Field(
        500,
        ge=0,
        le=60_000,
        description="How long typing must pause before an OpenAPI document is validated again.",
    )
    max_document_bytes: int = Field(
        32_000_000,
        ge=1_000,
        le=1_000_000_000,
        description="Larger documents get no OpenAPI diagnostics or actions (logged once).",
    )
    timeout_s: int = Field(
        600, ge=10, le=3_600, description="Longest a generate action may take; then it stops."
    )


class AiapiSettings(_Section):
    """Code generated from API contracts in the editor (docs/aiapi.md "Model-written parts")."""

    with_model: bool = Field(
        False,
        description="Let the backend's model write the generated clients' doc comments, "
        "their test skeletons' example values and READMEs when a generate action runs: each piece "
        "goes in only when the generator's own checks pass with it, else the generated text "
        "stays. Asked at the refactor priority; the action takes longer.",
    )
    react_query: bool = Field(
        False,
        description="The TypeScript generate actions also write TanStack React Query options "
        "per operation (src/@tanstack/react-query.gen.ts, by openapi-ts's plugin) and list "
        "@tanstack/react-query in the client's package.json, as --react-query does.",
    )


class LogSettings(_Section):
    """What the server logs, to the editor and optionally to a file."""

    level: str = Field(
        "info", pattern="^(debug|info|warning|error)$", description="The least severe level logged."
    )
    file: str | None = Field(None, description="Also append logs to this file.")
    completion_reports: str = Field(
        "off",
        pattern="^(off|timings|requests)$",
        description="Send the editor a `$/headstart/completionReport` notification for every "
        "inline completion: its stage timings ('timings'), and also the request sent to the "
        "backend ('requests'). For benchmarks (`headstart bench`) and debugging.",
    )
    stats_interval_s: int = Field(
        0,
        ge=0,
        le=86_400,
        description="Every this many seconds, log one `internals:` line (JSON): the server's "
        "tasks, pending messages and the size of each cache, to watch a long-running server "
        "(`benchmarks/load/soak.py` reads it). 0 = never.",
    )
    request_trace: str | None = Field(
        None,
        description="Append every request sent to the backend to this file, one JSON line "
        "each with its timing and how it ended: what `headstart bench replay` sends again, "
        "and a record of exactly what Headstart sent. The prompts hold your code.",
    )
    open_telemetry: bool = Field(
        False,
        description="Export OpenTelemetry spans of every completion request, stage by stage, "
        "and send a W3C traceparent with each backend request so the engine's spans join "
        "them (needs `pip install 'headstart[otel]'`). Where to: the standard OTEL_* "
        "variables (OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318). "
        "OTEL_TRACES_EXPORTER also turns it on; OTEL_SDK_DISABLED=true keeps it off. No code "
        "or prompt text goes into a span (docs/tracing.md).",
    )


SECTION = "headstart"
"""The settings' section in workspace configuration and initializationOptions."""

MACHINE_SETTINGS = (
    "backend.mode",
    "backend.url",
    "backend.apiKeyEnv",
    "backend.local",
    "completion.tokenizer",
    "log.file",
    "log.requestTrace",
    "cacheDir",
)
"""Settings a repository must not choose (a section's name stands for all its keys): where
the API key and the code go, an environment variable to read, a command, its arguments
and the model it runs, and paths to read or write outside the workspace. The server takes
them from initializationOptions and HEADSTART_* variables alone, never from the
workspace configuration (which an editor may answer from a repository's own files); VS
Code's extension makes them `machine` settings."""


def is_machine_setting(key: str) -> bool:
    """Whether the dotted camelCase `key` is one of MACHINE_SETTINGS (or inside one)."""
    return any(key == name or key.startswith(name + ".") for name in MACHINE_SETTINGS)


class Settings(_Section):
    """Every setting of Headstart; docs/settings.md documents each one."""

    backend: BackendSettings = Field(default_factory=BackendSettings)  # type: ignore[arg-type]
    completion: CompletionSettings = Field(default_factory=CompletionSettings)  # type: ignore[arg-type]
    refactor: RefactorSettings = Field(default_factory=RefactorSettings)  # type: ignore[arg-type]
    contracts: ContractSettings = Field(default_factory=ContractSettings)  # type: ignore[arg-type]
    aiapi: AiapiSettings = Field(default_factory=AiapiSettings)  # type: ignore[arg-type]
    log: LogSettings = Field(default_factory=LogSettings)  # type: ignore[arg-type]
    cache_dir: str | None = Field(None, description="Project cache directory.")

    def api_key(self) -> str | None:
        """The API key, read from the environment each time so it is never stored."""
        return os.environ.get(self.backend.api_key_env) or None


def keep_machine_settings(settings: Settings, trusted: Settings) -> tuple[Settings, list[str]]:
    """`settings` with each of MACHINE_SETTINGS as `trusted` has it, and the names of those
    it had otherwise: what a workspace configuration tried to choose."""
    values = settings.model_dump(by_alias=True)
    kept = trusted.model_dump(by_alias=True)
    changed = []
    for name in MACHINE_SETTINGS:
        *parents, last = name.split(".")
        node, source = values, kept
        for part in parents:
            node, source = node[part], source[part]
        changed += _differences(node[last], source[last], name)
        node[last] = source[last]
    if not changed:
        return settings, []
    return Settings.model_validate(values), changed


def _differences(value: Any, other: Any, name: str) -> list[str]:
    """The dotted names of the leaves where `value` and `other` differ."""
    if isinstance(value, dict) and isinstance(other, dict):
        return [n for key in value for n in _differences(value[key], other[key], f"{name}.{key}")]
    return [] if value == other else [name]


class SettingsError(ValueError):
    """A settings update that cannot be applied; the message names every bad field."""


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for var, path in ENV_OVERRIDES.items():
        if environ.get(var):
            node = layer
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = environ[var]
    return layer


def load_settings(
    *layers: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Validate the merged layers (later wins), then the environment on top.

    Raises SettingsError with one line per bad field.
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer is None:
            continue
        if not isinstance(layer, Mapping):
            raise SettingsError(f"settings must be an object, got {type(layer).__name__}")
        merged = _merge(merged, layer)
    merged = _merge(merged, _env_layer(os.environ if environ is None else environ))
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise SettingsError(f"invalid Headstart settings: {problems}") from None
