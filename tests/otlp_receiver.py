#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver, and a real OpenTelemetry collector to put in front of it.

`OtlpReceiver` takes what an OpenTelemetry exporter or collector sends to `/v1/traces`
(protobuf, gzip or not, as the OTLP specification says) and decodes it with
opentelemetry-proto, the wire format's own generated code: each span becomes a plain dict
(ids in hex, attributes as Python values, its resource's attributes beside them). Tests
assert on those; `benchmarks/latency/trace_waterfall.py` draws them.

`RotelCollector` runs Rotel (PyPI `rotel`, an OpenTelemetry collector in Rust whose wheel
carries its binary): OTLP in on its own port, batched and exported over OTLP/HTTP to the
receiver, so the server's spans cross a real collector on their way.

Standalone: ``python tests/otlp_receiver.py --port 4318 --out spans.jsonl`` receives until
interrupted and appends every span to the file (one JSON object a line).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

TRACES_PATH = "/v1/traces"


def plain(value: AnyValue) -> Any:
    """An OTLP AnyValue as the Python value it holds."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(plain(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind is None:
        return None
    return getattr(value, kind)


def attributes(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {pair.key: plain(pair.value) for pair in pairs}


def decode(body: bytes) -> list[dict[str, Any]]:
    """The spans of one ExportTraceServiceRequest."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    {
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "start_ns": span.start_time_unix_nano,
                        "end_ns": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "status": span.status.code,
                        "links": [
                            {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()}
                            for link in span.links
                        ],
                        "scope": scope_spans.scope.name,
                        "resource": resource,
                    }
                )
    return spans


class OtlpReceiver:
    """Receives OTLP/HTTP traces on 127.0.0.1 in a thread; `spans()` is all so far."""

    def __init__(self, out: Path | None = None, port: int = 0, host: str = "127.0.0.1") -> None:
        self.out = out
        self.bodies: list[bytes] = []
        """Every request body as received, decompressed (for what must never be in one)."""
        self._spans: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding", "").lower() == "gzip":
                    body = gzip.decompress(body)
                if self.path != TRACES_PATH:
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver.received(body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (the exporter adds
        /v1/traces)."""
        return f"http://127.0.0.1:{self.port}"

    def received(self, body: bytes) -> None:
        spans = decode(body)
        with self._lock:
            self.bodies.append(body)
            self._spans.extend(spans)
            if self.out is not None:
                with self.out.open("a", encoding="utf-8") as file:
                    for span in spans:
                        file.write(json.dumps(span) + "\n")

    def spans(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._spans)

    def wait_for(
        self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 10.0
    ) -> list[dict[str, Any]]:
        """The spans once `predicate(spans)` holds; AssertionError with them if it never
        does within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans()
            if predicate(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted(s["name"] for s in spans)
                raise AssertionError(f"spans not received within {timeout} s; got {names}")
            time.sleep(0.05)

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rotel_binary() -> Path | None:
    """The collector binary of the `rotel` wheel, where it is installed."""
    spec = importlib.util.find_spec("rotel")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "rotel-agent"
    return binary if binary.is_file() else None


class RotelCollector:
    """Rotel receiving OTLP/HTTP on a port of its own and exporting, batched, to `target`
    (an OtlpReceiver's URL) over OTLP/HTTP."""

    def __init__(self, binary: Path, target: str, workdir: Path) -> None:
        self.port = free_port()
        self.log_file = workdir / "rotel.log"
        self.command = [
            str(binary),
            "start",
            "--otlp-http-endpoint",
            f"127.0.0.1:{self.port}",
            "--otlp-grpc-endpoint",
            f"127.0.0.1:{free_port()}",
            "--exporter",
            "otlp",
            "--otlp-exporter-protocol",
            "http",
            "--otlp-exporter-endpoint",
            target,
            "--traces-batch-timeout",
            "50ms",
            "--pid-file",
            str(workdir / "rotel.pid"),
            "--log-file",
            str(self.log_file),
        ]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> RotelCollector:
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log_file.with_suffix(".stderr").open("wb"),
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"rotel did not listen: {self.logs()}") from None
                time.sleep(0.05)

    def logs(self) -> str:
        parts = [self.log_file, self.log_file.with_suffix(".stderr")]
        return "\n".join(p.read_text(errors="replace") for p in parts if p.exists())

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def __enter__(self) -> RotelCollector:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to append spans to")
    args = parser.parse_args()
    receiver = OtlpReceiver(args.out, args.port, args.host).start()
    print(f"receiving OTLP/HTTP traces on {receiver.url}{TRACES_PATH} into {args.out}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        receiver.stop()
    print(f"{len(receiver.spans())} spans received", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
