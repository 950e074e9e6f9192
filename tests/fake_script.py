"""What the fake model is told to do: the behaviours a test can script (stalls, drops,
broken streams, refusals...), and the rules (`Script`, POST /_script) that pick one for a
prompt, with the text to answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_MODEL = "fake-coder"
DEFAULT_TEXT = "pass"
MAX_MODEL_LEN = 4096
BEHAVIOURS = frozenset(
    {
        "normal",
        "stall",
        "drop",
        "http_500",
        "garbage",
        "stall_forever",
        "bad_json_body",
        "corrupt",
        "empty",
        "endless",
        "huge_line",
        "bad_utf8",
        "html_200",
    }
)
HUGE_LINE_BYTES = 100 * 1024 * 1024
"""'huge_line': an event this long that never ends (a backend gone mad)."""
CORRUPT_TEXT = "\ufffd\x00\ufffd"
STALL_CAP_S = 120.0  # a plain "stall" gives up after this long, so no test can hang forever
BAD_BODY = b"<html>oops</html>"
GARBAGE_EVENTS = (
    b"data: {not json\n\n",
    b'data: {"choices": 5}\n\n',
    b"this line has no data prefix\n\n",
)


class BadRequest(Exception):
    """A request the fake cannot make sense of; answered with an error instead of a crash."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _get_int(raw: Mapping[str, Any], key: str, default: int | None) -> int | None:
    """Read a non-negative int field, rejecting bools and floats so typos fail loudly."""
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"{key} must be a non-negative integer, got {value!r}")
    return value


def _get_ms(raw: Mapping[str, Any], key: str) -> float:
    """Read a non-negative delay in milliseconds (int or float)."""
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise BadRequest(f"{key} must be a non-negative number of milliseconds, got {value!r}")
    return float(value)


def _get_str(raw: Mapping[str, Any], key: str, default: str) -> str:
    """Read a string field."""
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise BadRequest(f"{key} must be a string, got {value!r}")
    return value


@dataclass
class Rule:
    """How to answer completion requests whose prompt contains ``match``."""

    match: str = ""
    text: str = ""
    chunk_chars: int = 4
    first_delay_ms: float = 0.0
    chunk_delay_ms: float = 0.0
    behaviour: str = "normal"
    after_chunks: int = 2
    times: int | None = None
    used: int = 0  # requests served so far; reported by GET /_script, not settable

    FIELDS = frozenset(
        {
            "match",
            "text",
            "chunk_chars",
            "first_delay_ms",
            "chunk_delay_ms",
            "behaviour",
            "behavior",
            "after_chunks",
            "times",
        }
    )

    @classmethod
    def from_json(cls, raw: object) -> Rule:
        """Validate one rule strictly, so a misspelt field fails the test that sent it."""
        if not isinstance(raw, dict):
            raise BadRequest(f"a rule must be an object, got {raw!r}")
        unknown = set(raw) - cls.FIELDS
        if unknown:
            known = sorted(cls.FIELDS)
            raise BadRequest(f"unknown rule field(s) {sorted(unknown)}; known: {known}")
        behaviour = _get_str(raw, "behaviour", _get_str(raw, "behavior", "normal"))
        if behaviour not in BEHAVIOURS:
            raise BadRequest(f"unknown behaviour {behaviour!r}; known: {sorted(BEHAVIOURS)}")
        chunk_chars = _get_int(raw, "chunk_chars", 4)
        if not chunk_chars:
            raise BadRequest("chunk_chars must be at least 1")
        return cls(
            match=_get_str(raw, "match", ""),
            text=_get_str(raw, "text", ""),
            chunk_chars=chunk_chars,
            first_delay_ms=_get_ms(raw, "first_delay_ms"),
            chunk_delay_ms=_get_ms(raw, "chunk_delay_ms"),
            behaviour=behaviour,
            after_chunks=_get_int(raw, "after_chunks", 2) or 0,
            times=_get_int(raw, "times", None),
        )

    def to_json(self) -> dict[str, Any]:
        """The rule as GET /_script shows it."""
        return {
            "match": self.match,
            "text": self.text,
            "chunk_chars": self.chunk_chars,
            "first_delay_ms": self.first_delay_ms,
            "chunk_delay_ms": self.chunk_delay_ms,
            "behaviour": self.behaviour,
            "after_chunks": self.after_chunks,
            "times": self.times,
            "used": self.used,
        }


@dataclass
class Script:
    """The ordered rules plus the text used when no rule matches."""

    rules: list[Rule]
    default_text: str
    refuse_fields: tuple[str, ...] = ()
    """Request fields answered with 400, as a server that does not know them would
    (e.g. `priority` on a vLLM without priority scheduling), dotted for nested ones
    (`structured_outputs.grammar`: a vLLM whose xgrammar backend cannot read the Lark
    grammar of token healing)."""
    serve_model: str | None = None
    """The model served instead of the launch one, as a backend restarted with another
    model: /v1/models lists it, and a completion naming any other model gets vLLM's 404."""
    refuse_token_ids: bool = False
    """Answer a prompt of token ids with 400, as a server that calls itself vLLM in
    /v1/models but takes text prompts only (a proxy in front of vLLM may)."""
    tokenizer: str | None = None
    """A tokenizer.json: POST /tokenize answers with its ids, as vLLM does with the served
    model's tokenizer. Without one, /tokenize is 404 (a proxy may not pass it on)."""
    ignore_constraints: bool = False
    """Take `structured_outputs` and SGLang's `regex` and answer as if they were not there,
    as a server that drops fields it does not know (a proxy may)."""

    @classmethod
    def from_json(cls, raw: object, fallback_text: str) -> Script:
        """Parse a POST /_script body; a missing default_text means the launch default."""
        if not isinstance(raw, dict):
            raise BadRequest("script must be an object {rules: [...], default_text: str}")
        known = {
            "rules",
            "default_text",
            "refuse_fields",
            "serve_model",
            "refuse_token_ids",
            "tokenizer",
            "ignore_constraints",
        }
        unknown = set(raw) - known
        if unknown:
            raise BadRequest(f"unknown script field(s) {sorted(unknown)}")
        rules = raw.get("rules", [])
        if not isinstance(rules, list):
            raise BadRequest("rules must be a list")
        default_text = raw.get("default_text")
        if default_text is None:
            default_text = fallback_text
        if not isinstance(default_text, str):
            raise BadRequest("default_text must be a string")
        refuse = raw.get("refuse_fields", [])
        if not isinstance(refuse, list) or not all(isinstance(f, str) for f in refuse):
            raise BadRequest("refuse_fields must be a list of strings")
        serve_model = raw.get("serve_model")
        if not (serve_model is None or isinstance(serve_model, str)):
            raise BadRequest("serve_model must be a string")
        refuse_ids = raw.get("refuse_token_ids", False)
        if not isinstance(refuse_ids, bool):
            raise BadRequest("refuse_token_ids must be a boolean")
        tokenizer = raw.get("tokenizer")
        if not (tokenizer is None or isinstance(tokenizer, str)):
            raise BadRequest("tokenizer must be the path of a tokenizer.json")
        ignore = raw.get("ignore_constraints", False)
        if not isinstance(ignore, bool):
            raise BadRequest("ignore_constraints must be a boolean")
        rules_parsed = [Rule.from_json(r) for r in rules]
        return cls(
            rules_parsed, default_text, tuple(refuse), serve_model, refuse_ids, tokenizer, ignore
        )

    def pick(self, prompt: str) -> tuple[int | None, Rule]:
        """First live rule whose ``match`` occurs in the prompt, else the default text."""
        for index, rule in enumerate(self.rules):
            if rule.times is not None and rule.used >= rule.times:
                continue
            if rule.match in prompt:
                rule.used += 1
                return index, rule
        return None, Rule(text=self.default_text)

    def to_json(self) -> dict[str, Any]:
        """The script as GET /_script shows it."""
        return {
            "rules": [r.to_json() for r in self.rules],
            "default_text": self.default_text,
            "refuse_fields": list(self.refuse_fields),
            "serve_model": self.serve_model,
            "refuse_token_ids": self.refuse_token_ids,
            "tokenizer": self.tokenizer,
            "ignore_constraints": self.ignore_constraints,
        }
