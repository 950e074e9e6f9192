"""Tracing on: the OpenTelemetry SDK, configured from the environment as its authors intend.

Imported only once tracing is turned on (server.tracing.configure). The tracer provider
reads its resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), sampler
(OTEL_TRACES_SAMPLER) and limits from the environment; the exporters named in
OTEL_TRACES_EXPORTER (default otlp) are the SDK's own entry points, each reading its
endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_*, behind a
BatchSpanProcessor (OTEL_BSP_*), so that ending a span costs the request path a queue
append and the export happens on the SDK's thread. Propagation is the global propagator's
(OTEL_PROPAGATORS, W3C trace context by default).

A tracer provider set up before us (`opentelemetry-instrument headstart serve`) is used as
it is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import TracebackType
from typing import Any, Final
from urllib.parse import urlsplit

from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from server import __version__
from server.tracing import Attributes, Value

INSTRUMENTATION: Final = "headstart"
EXPORTER_GROUP: Final = "opentelemetry_traces_exporter"
"""The entry points the SDK's own configurator loads exporters from."""
OTLP_BY_PROTOCOL: Final = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}
DEFAULT_PROTOCOL: Final = "http/protobuf"
"""The specification's default, which `headstart[otel]` installs the exporter of (the
Python SDK's own configurator defaults to grpc)."""
KINDS: Final = {"server": SpanKind.SERVER, "internal": SpanKind.INTERNAL}
EXPORT_TIMEOUT_S: Final = 2.0
"""How long one OTLP export may retry, unless OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT says: the
SDK's 10 s held an editor's shutdown that long with no collector listening (its flush
waits for the export under way, opentelemetry-python#4568)."""


def _exporter(name: str, environ: Mapping[str, str]) -> SpanExporter:
    if name == "console":  # stdout is the LSP channel in stdio mode
        return ConsoleSpanExporter(out=sys.stderr)
    if name == "otlp":
        protocol = (
            environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or DEFAULT_PROTOCOL
        ).strip()
        if protocol not in OTLP_BY_PROTOCOL:
            raise ValueError(f"unsupported OTLP protocol {protocol!r} (http/protobuf or grpc)")
        name = OTLP_BY_PROTOCOL[protocol]
    found = entry_points(group=EXPORTER_GROUP, name=name)
    if not found:
        hint = " (pip install opentelemetry-exporter-otlp-proto-grpc)" if "grpc" in name else ""
        raise ValueError(f"no span exporter {name!r} installed{hint}")
    exporter_class = next(iter(found)).load()
    timeout_set = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" in environ or (
        "OTEL_EXPORTER_OTLP_TIMEOUT" in environ
    )
    ours = name.startswith("otlp") and not timeout_set
    arguments = {"timeout": EXPORT_TIMEOUT_S} if ours else {}
    exporter: SpanExporter = exporter_class(**arguments)
    return exporter


def _where(endpoint: str | None) -> str:
    """An endpoint as the log may show it: scheme, host and port (a URL may hold a user and
    password)."""
    if not endpoint:
        return "the default endpoint"
    parts = urlsplit(endpoint)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def _resource() -> Resource:
    """The environment's resource, named `headstart` unless OTEL_SERVICE_NAME (or
    OTEL_RESOURCE_ATTRIBUTES) names it otherwise."""
    detected = Resource.create()
    ours: dict[str, Value] = {SERVICE_VERSION: __version__}
    if str(detected.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        ours[SERVICE_NAME] = INSTRUMENTATION
    return detected.merge(Resource(ours))


class OtelTracing:
    """Spans from one tracer, and their propagation headers."""

    def __init__(
        self, provider: trace.TracerProvider, exporters: tuple[str, ...], endpoint: str = ""
    ) -> None:
        self.provider = provider
        self.exporters = exporters
        self.endpoint = endpoint
        self.tracer = provider.get_tracer(INSTRUMENTATION, __version__)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> OtelTracing:
        """The global tracer provider if one was set up already, else ours, set global."""
        environ = os.environ if environ is None else environ
        current = trace.get_tracer_provider()
        if not isinstance(current, trace.ProxyTracerProvider):
            return cls(current, ())
        names = environ.get("OTEL_TRACES_EXPORTER", "").strip() or "otlp"
        exporters = [_exporter(n.strip().lower(), environ) for n in names.split(",") if n.strip()]
        provider = TracerProvider(resource=_resource())
        for exporter in exporters:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        return cls(provider, tuple(type(e).__name__ for e in exporters), _where(endpoint))

    def describe(self) -> str:
        """What the log says tracing exports with, and where to."""
        if not self.exporters:
            return f"the tracer provider already set up ({type(self.provider).__name__})"
        return f"{', '.join(self.exporters)} to {self.endpoint}"

    def span(
        self,
        name: str,
        attributes: Attributes | None,
        start_ns: int | None,
        root: bool,
        kind: str,
    ) -> CurrentSpan:
        parent = None
        links = None
        if root:
            current = trace.get_current_span().get_span_context()
            links = [Link(current)] if current.is_valid else None
            parent = context.Context()
        started = self.tracer.start_span(
            name,
            context=parent,
            kind=KINDS[kind],
            attributes=attributes,
            links=links,
            start_time=start_ns,
            record_exception=False,
            set_status_on_exception=False,
        )
        return CurrentSpan(self.tracer, started)

    def client_span(
        self, name: str, attributes: Attributes | None, start_ns: int | None
    ) -> OtelSpan:
        started = self.tracer.start_span(
            name,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=start_ns,
            record_exception=False,
            set_status_on_exception=False,
        )
        return OtelSpan(self.tracer, started)

    def flush(self, timeout_s: float) -> None:
        force_flush = getattr(self.provider, "force_flush", None)
        if force_flush is not None:
            force_flush(int(timeout_s * 1000))


class OtelSpan:
    """An SDK span behind server.tracing's `Span`."""

    __slots__ = ("_span", "_tracer")

    def __init__(self, tracer: trace.Tracer, span: trace.Span) -> None:
        self._tracer = tracer
        self._span = span

    def set(self, key: str, value: Value) -> None:
        self._span.set_attribute(key, value)

    def failed(self, error: BaseException) -> None:
        self._span.set_attribute("error.type", type(error).__qualname__)
        self._span.set_status(Status(StatusCode.ERROR))

    def child(
        self, name: str, start_ns: int, end_ns: int, attributes: Attributes | None = None
    ) -> None:
        inside = trace.set_span_in_context(self._span)
        self._tracer.start_span(
            name, context=inside, attributes=attributes, start_time=start_ns
        ).end(end_time=end_ns)

    def headers(self) -> dict[str, str]:
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(self._span))
        return carrier

    def end(self, end_ns: int | None = None) -> None:
        self._span.end(end_time=end_ns)

    def __enter__(self) -> OtelSpan:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(error, Exception):
            self.failed(error)
        self.end()


class CurrentSpan(OtelSpan):
    """A span made current for its `with` block (attached to the task's context there)."""

    __slots__ = ("_token",)

    def __init__(self, tracer: trace.Tracer, span: trace.Span) -> None:
        super().__init__(tracer, span)
        self._token: Any = None

    def __enter__(self) -> CurrentSpan:
        self._token = context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(error, Exception):  # not a cancellation (a BaseException)
            self.failed(error)
        self.end()
        if self._token is not None:
            context.detach(self._token)
            self._token = None
