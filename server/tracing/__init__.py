"""OpenTelemetry spans for the request path, and the W3C `traceparent` of backend requests.

Optional (`pip install 'headstart[otel]'`) and off unless asked for: by the setting
`log.openTelemetry`, or by OTEL_TRACES_EXPORTER in the server's environment, as the
OpenTelemetry specification names the exporter; OTEL_SDK_DISABLED=true or
OTEL_TRACES_EXPORTER=none keep it off whatever the setting says. Where spans go (endpoint,
protocol, headers, sampler, service name) is the SDK's to read from the standard OTEL_*
variables (server.tracing.otel).

While off, nothing here imports opentelemetry and every call returns the one do-nothing
span: the request path pays a function call and a test per stage. Callers give spans
names, counts, durations and enums only, never code, prompt text or anything a secret could
be in (docs/architecture.md, Trust and safety).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from server.tracing.otel import OtelTracing

log = logging.getLogger(__name__)

Value = str | bool | int | float | tuple[str, ...]
"""What an attribute may hold: a name, a count, a duration, a flag, or names."""
Attributes = Mapping[str, Value]


class Span(Protocol):
    """One stage of a request, as the callers see it whether tracing is on or off."""

    def set(self, key: str, value: Value) -> None: ...

    def failed(self, error: BaseException) -> None:
        """Mark the span as an error, naming the error's type (not its message, which may
        quote a response or a path)."""

    def child(
        self, name: str, start_ns: int, end_ns: int, attributes: Attributes | None = None
    ) -> None:
        """A finished stage inside this one, timed by the caller (wall-clock ns)."""

    def headers(self) -> dict[str, str]:
        """The propagation headers (`traceparent`) of a request sent within this span."""

    def end(self, end_ns: int | None = None) -> None: ...

    def __enter__(self) -> Span: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


class NoSpan:
    """The span of every call while tracing is off: it does nothing, and is shared."""

    __slots__ = ()

    def set(self, key: str, value: Value) -> None:
        pass

    def failed(self, error: BaseException) -> None:
        pass

    def child(
        self, name: str, start_ns: int, end_ns: int, attributes: Attributes | None = None
    ) -> None:
        pass

    def headers(self) -> dict[str, str]:
        return {}

    def end(self, end_ns: int | None = None) -> None:
        pass

    def __enter__(self) -> NoSpan:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        pass


NO_SPAN: Final = NoSpan()

_on: OtelTracing | None = None
"""The SDK-backed tracing while on; None while off."""
_made: OtelTracing | None = None
"""The one made so far: a process has one global tracer provider, so turning tracing off
and on again reuses it."""


def enabled() -> bool:
    return _on is not None


def span(name: str, attributes: Attributes | None = None, start_ns: int | None = None) -> Span:
    """A span to use as `with span(...) as s:`, current inside the block, so the stages and
    backend requests made in it are its children. An exception other than a cancellation
    marks it failed."""
    tracing = _on
    if tracing is None:
        return NO_SPAN
    return tracing.span(name, attributes, start_ns, root=False, kind="internal")


def root_span(
    name: str,
    attributes: Attributes | None = None,
    start_ns: int | None = None,
    kind: str = "server",
) -> Span:
    """As `span`, but the start of a trace of its own, linked to the current span if any:
    a keystroke's request (kind server: the editor's request served), or speculative work
    a keystroke started (kind internal) that goes on after its reply."""
    tracing = _on
    if tracing is None:
        return NO_SPAN
    return tracing.span(name, attributes, start_ns, root=True, kind=kind)


def client_span(
    name: str, attributes: Attributes | None = None, start_ns: int | None = None
) -> Span:
    """A span for one request to the backend, a child of the current span, not made current
    (it may end in another task, as a closed stream does): end it with `end`, and send its
    `headers()` with the request."""
    tracing = _on
    if tracing is None:
        return NO_SPAN
    return tracing.client_span(name, attributes, start_ns)


def wanted(setting: bool, environ: Mapping[str, str]) -> tuple[bool, str]:
    """Whether tracing should be on, and why (for the log)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False, "OTEL_SDK_DISABLED is true"
    exporters = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters == "none":
        return False, "OTEL_TRACES_EXPORTER is none"
    if setting:
        return True, "log.openTelemetry is on"
    if exporters:
        return True, f"OTEL_TRACES_EXPORTER is {exporters}"
    return False, "off (log.openTelemetry, OTEL_TRACES_EXPORTER)"


def configure(setting: bool, environ: Mapping[str, str] | None = None) -> None:
    """Turn tracing on or off as `log.openTelemetry` and the environment say, with one log
    line when that changes. A failure to start it (the extra not installed, an unknown
    exporter) is logged and leaves it off; the server goes on."""
    global _on, _made
    on, why = wanted(setting, os.environ if environ is None else environ)
    if not on:
        if _on is not None:
            _on = None
            log.info("OpenTelemetry tracing stopped: %s", why)
        return
    if _on is not None:
        return
    if _made is None:
        try:
            from server.tracing.otel import OtelTracing
        except ImportError as exc:
            log.error(
                "OpenTelemetry tracing is asked for (%s) but not installed (%s): "
                "pip install 'headstart[otel]'",
                why,
                exc,
            )
            return
        try:
            _made = OtelTracing.from_environment(environ)
        except Exception as exc:  # an unknown exporter or protocol in OTEL_*
            log.error("OpenTelemetry tracing not started: %s", exc)
            return
    _on = _made
    log.info("OpenTelemetry tracing on (%s): %s", why, _made.describe())


def flush(timeout_s: float) -> None:
    """Export the spans ended so far, waiting `timeout_s` at most (at shutdown)."""
    if _made is not None:
        _made.flush(timeout_s)
