"""Contract tests: the generated Python client calls every operation of a mock that plays
the contract (Prism, from npm, validating each request against the document and answering
from its examples or schemas).

An operation passes when the mock accepts the request the client sends and the client
reads the answer into the types it declares. Arguments come from the parameters'
examples, defaults, enums and schemas (`example_value`); credentials for every security
scheme are sent, as Prism only checks that they are there. TypeScript and Go clients are
not called yet.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.operations import schema_types
from server.aiapi.python_client import argument_names, client_methods
from server.aiapi.tools import GeneratorError, ToolMissing, tools_folder

STRING_FORMATS = {
    "date-time": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "time": "03:04:05",
    "uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "byte": "YWJj",
}


@dataclass
class ContractTestResult:
    ok: bool
    seconds: float
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    output: str = ""


def prism_command() -> str:
    path = tools_folder() / "aiapi-mock" / "node_modules" / ".bin" / "prism"
    if not path.exists():
        raise ToolMissing("contract", "prism is not installed: run server/aiapi/install_tools.sh")
    return str(path)


def example_value(document: ContractDocument, schema: Any, depth: int = 0) -> Any:
    """A value the schema accepts, as plain as possible, the same every time."""
    schema = document.resolve(schema)
    if not isinstance(schema, dict) or depth > 6:
        return "a"
    declared, _ = schema_types(schema)
    for key in ("example", "default"):  # trusted only where it has the schema's type
        if key in schema and _has_type(schema[key], declared):
            return schema[key]
    enum = [v for v in schema.get("enum") or [] if v is not None]
    if enum:
        return enum[0]
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = example_value(document, part, depth + 1)
            if isinstance(value, dict):
                merged.update(value)
            else:
                return value
        return merged
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return example_value(document, schema[key][0], depth + 1)
    if declared is None and "properties" in schema:
        declared = "object"
    if declared == "string":
        if schema.get("format") in STRING_FORMATS:
            return STRING_FORMATS[schema["format"]]
        length = max(int(schema.get("minLength") or 1), 1)
        return "a" * length
    if declared in ("integer", "number"):
        low = schema.get("minimum")
        high = schema.get("maximum")
        value = low if isinstance(low, int | float) else 1
        if schema.get("exclusiveMinimum") is True:
            value += 1
        if isinstance(high, int | float) and value > high:
            value = high
        return int(value) if declared == "integer" else float(value)
    if declared == "boolean":
        return True
    if declared == "array":
        count = max(int(schema.get("minItems") or 1), 1)
        return [example_value(document, schema.get("items"), depth + 1)] * count
    if declared == "object" or declared is None:
        properties = schema.get("properties") or {}
        required = [r for r in schema.get("required") or [] if r in properties]
        return {name: example_value(document, properties[name], depth + 1) for name in required}
    return "a"


def _has_type(value: Any, declared: str | None) -> bool:
    if value is None:
        return False
    expected: dict[str | None, Any] = {
        "string": str, "integer": int, "number": int | float, "boolean": bool,
        "array": list, "object": dict,
    }  # fmt: skip
    if declared not in expected:
        return not isinstance(value, str) or declared is None
    if declared in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, expected[declared])


def credentials(document: ContractDocument) -> tuple[dict[str, str], dict[str, str]]:
    """Headers and query parameters carrying a credential for every security scheme."""
    headers: dict[str, str] = {}
    params: dict[str, str] = {}
    schemes = (document.data.get("components") or {}).get("securitySchemes") or {}
    for raw in schemes.values():
        scheme = document.resolve(raw)
        if not isinstance(scheme, dict):
            continue
        kind = scheme.get("type")
        if kind == "apiKey" and isinstance(scheme.get("name"), str):
            if scheme.get("in") == "header":
                headers[scheme["name"]] = "contract-test-key"
            elif scheme.get("in") == "query":
                params[scheme["name"]] = "contract-test-key"
        elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
            headers["Authorization"] = "Basic " + base64.b64encode(b"user:pass").decode()
        elif kind in ("http", "oauth2", "openIdConnect"):
            headers["Authorization"] = "Bearer contract-test-token"
    return headers, params


def call_plan(document: ContractDocument) -> list[dict[str, Any]]:
    """For each client method: the arguments to call it with."""
    plan = []
    for method, op in client_methods(document):
        arguments = {
            name: example_value(document, param.schema)
            for param, name in argument_names(op)
            if param.required
        }
        if op.body is not None and op.body_required:
            if op.body.is_json:
                arguments["body"] = example_value(document, op.body.schema)
            elif op.body.is_form:
                fields = example_value(document, op.body.schema)
                arguments["data"] = fields if isinstance(fields, dict) else {}
            else:
                arguments["content"] = "a"  # bytes, made so by the driver
        entry: dict[str, Any] = {"method": method, "arguments": arguments, "route": op.route}
        if "#" in op.route:
            entry["skip"] = "the route has a #fragment (AWS's X-Amz-Target), which HTTP never sends"
        plan.append(entry)
    return plan


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_contract_tests(
    document: ContractDocument, package: Path, timeout_s: float = 600
) -> ContractTestResult:
    """Start Prism on the document, call every operation through the package's Client."""
    started = time.perf_counter()
    prism = prism_command()
    port = free_port()
    headers, params = credentials(document)
    with tempfile.TemporaryDirectory(prefix="headstart-contract-") as scratch:
        plan_file = Path(scratch) / "plan.json"
        plan_file.write_text(
            json.dumps({"plan": call_plan(document), "headers": headers, "params": params}),
            encoding="utf-8",
        )
        log = (Path(scratch) / "prism.log").open("w")
        mock = subprocess.Popen(
            [prism, "mock", "--host", "127.0.0.1", "--port", str(port), "--errors", "false",
             str(document.path.resolve())],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            _wait_for_port(port, mock, Path(scratch) / "prism.log", timeout_s=120)
            done = subprocess.run(
                [sys.executable, "-m", "server.aiapi.contract_driver",
                 str(package.resolve().parent), package.name, f"http://127.0.0.1:{port}",
                 str(plan_file)],
                capture_output=True, text=True, timeout=timeout_s,
                cwd=Path(__file__).resolve().parents[2],
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return ContractTestResult(False, time.perf_counter() - started, output="timed out")
        finally:
            with contextlib.suppress(ProcessLookupError):  # it may have exited on its own
                os.killpg(mock.pid, signal.SIGTERM)
            mock.wait(timeout=30)
            log.close()
    if done.returncode != 0:
        output = done.stdout + done.stderr
        return ContractTestResult(False, time.perf_counter() - started, output=output[-3000:])
    report = json.loads(done.stdout)
    outcomes: Counter[str] = Counter(entry["outcome"] for entry in report)
    failures = [
        f"{entry['method']} ({entry['route']}): {entry['outcome']}: {entry['detail']}"
        for entry in report
        if entry["outcome"] != "ok" and not entry["outcome"].startswith("skipped")
    ]
    return ContractTestResult(
        ok=not failures,
        seconds=time.perf_counter() - started,
        outcomes=outcomes,
        failures=failures,
        output="\n".join(failures[:20]),
    )


def _wait_for_port(port: int, mock: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if mock.poll() is not None:
            raise GeneratorError("contract", "prism exited", log.read_text()[-3000:])
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise GeneratorError("contract", f"prism did not listen within {timeout_s:.0f} s")
