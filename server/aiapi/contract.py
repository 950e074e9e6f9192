"""Contract tests: each generated client (Python, TypeScript, Go) calls every operation of a
mock that plays the contract (Prism, from npm, validating each request against the
document and answering from its examples or schemas).

One plan for the three languages: the arguments of every operation are built here, once
(`example_value`: the parameters' examples, defaults, enums and schemas, strings made to
match their patterns), and handed as JSON to a small driver per language
(contract_driver.py, contract_drivers/driver.cjs, contract_drivers/driver.go) that calls
the generated client and reports, per call, what happened and the raw answer. Credentials
for every security scheme are sent, as Prism only checks that they are there.

An operation passes when Prism accepts the request and the client reads the answer into
the type it declares (Python: pydantic; TypeScript: the SDK's zod response validator; Go:
encoding/json into the struct, unknown fields allowed). When the client rejects an
answer, the answer is judged against the document's own schema: if the answer breaks the
schema, the client was right and the mock or the document is to blame (an example that
contradicts its schema, or Prism's static placeholder such as "string" for a pattern), so
the call is made again with Prism generating an answer from the schema (`Prefer:
dynamic=true`, seeded) and the client is judged on that one. Those cases are counted as
notes of their own (`ContractTestResult.notes`), never hidden and never a pass by default.

The parts: example values (contract_examples.py), judging an answer by the schema
(contract_judge.py), the mock (contract_mock.py); the plan and the drivers' runs here.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.aiapi.contract_examples import example_value, has_type
from server.aiapi.contract_judge import judge_answer, response_media, schema_judge
from server.aiapi.contract_mock import (
    BODILESS_METHODS,
    PrismMock,
    Repair,
    external_refs,
)
from server.aiapi.document import ContractDocument
from server.aiapi.operations import Operation, collect_operations, schema_types
from server.aiapi.tools import GeneratorError, go_tool, node_tool, tools_folder

DRIVERS = Path(__file__).resolve().parent / "contract_drivers"
PRISM_ERROR = "stoplight.io/prism/errors#"
MAX_MOCK_RESTARTS = 5
# Headers an HTTP library sends on its own (Node's fetch: `accept-language: *`): an optional
# header parameter of that name is given a value, or the library's would be judged
LIBRARY_HEADERS = frozenset({"accept-language", "accept-encoding", "user-agent"})


@dataclass
class ContractTestResult:
    ok: bool
    seconds: float
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    output: str = ""
    # the document's or the mock's part, counted apart from the client's (see the module)
    notes: Counter[str] = field(default_factory=Counter)
    untested: list[str] = field(default_factory=list)  # each skipped call, and why


# ---------------------------------------------------------------------------------------
# The plan: one call per operation, its arguments built once for every language


@dataclass
class PlannedCall:
    index: int
    operation: Operation
    raw: dict[str, Any]
    parameters: list[tuple[Any, Any]]  # (Parameter, value) for the required ones
    body: Any = None  # the body's value (also for an optional body: Go's signature takes one)
    skip: str | None = None

    @property
    def label(self) -> str:
        return f"{self.operation.method.upper()} {self.operation.route}"


def planned_calls(document: ContractDocument) -> list[PlannedCall]:
    raw_by_key = {(route, method): raw for route, method, raw, _ in document.operations()}
    operations = collect_operations(document)
    paths = Counter((op.route.split("?")[0], op.method) for op in operations)
    shared_paths = {key for key, count in paths.items() if count > 1}
    calls = []
    for index, op in enumerate(operations):
        parameters = [
            (param, parameter_value(document, param.schema))
            for param in op.parameters
            if param.required
            or (param.location == "header" and param.name.lower() in LIBRARY_HEADERS)
        ]
        body = None
        if op.body is not None:
            body = example_value(document, op.body.schema)
            if op.body.is_form and not isinstance(body, dict):
                body = {}
            elif op.body.is_form and not body and op.body_required:
                # an empty form is no body to Prism ("Body parameter is required"):
                # circuitsandbox's webhook form has no required field, so give it its fields
                filled = example_value(document, op.body.schema, full=1)
                body = filled if isinstance(filled, dict) else body
            elif not op.body.is_json and not op.body.is_form:
                body = "a"  # bytes or text, made so by each driver
        call = PlannedCall(index, op, raw_by_key.get((op.route, op.method), {}), parameters, body)
        if "#" in op.route:
            call.skip = "the route has a #fragment (AWS's X-Amz-Target), which HTTP never sends"
        elif "?" in op.route and (op.route.split("?")[0], op.method) in shared_paths:
            call.skip = (
                "the route has a ?query and another operation the same path "
                "(formapi's /templates?desc=html beside /templates): Prism routes by the "
                "path alone"
            )
        else:
            call.skip = _uncallable(document, op, call.raw)
        calls.append(call)
    return calls


def parameter_value(document: ContractDocument, schema: Any) -> Any:
    """A parameter's example value, one that reads the same once it is text on the wire:
    GitHub's workflow_id is `oneOf: [integer, string]`, so 1, sent as "1", is valid under
    both alternatives and Prism refuses it; "a" is valid under the string one only."""
    value = example_value(document, schema)
    resolved = document.resolve(schema)
    branches = resolved.get("oneOf") if isinstance(resolved, dict) else None
    if not isinstance(branches, list) or len(branches) < 2:
        return value
    judge = schema_judge(document)

    def readings(candidate: Any) -> int:
        text = candidate if isinstance(candidate, str) else json.dumps(candidate)
        forms = [candidate, text]
        with contextlib.suppress(ValueError):
            forms.append(json.loads(text))
        return sum(any(judge.fits(branch, form) for form in forms) for branch in branches)

    for candidate in [value, *(example_value(document, b) for b in branches)]:
        if readings(candidate) == 1:
            return candidate
    return value


def _uncallable(document: ContractDocument, op: Operation, raw: Any) -> str | None:
    """Why no request can pass the mock, where the document itself rules every one out."""
    for param in op.parameters:
        schema = document.resolve(param.schema)
        if not param.required or not isinstance(schema, dict):
            continue
        declared, _ = schema_types(schema)
        properties = schema.get("properties")
        if (
            param.location == "path"
            and declared == "object"
            and isinstance(properties, dict)
            and schema.get("additionalProperties") is False
        ):
            writable = [
                name
                for name, field in properties.items()
                if not (
                    isinstance(document.resolve(field), dict)
                    and document.resolve(field).get("readOnly")
                )
            ]
            if not writable:  # its only valid value is {}, an empty path segment
                return (
                    f"the document is inconsistent: path parameter {param.name} is an object "
                    "whose every property is read-only (jellyfin's Version), so a request "
                    "can only carry it as an empty path segment"
                )
        enum = [v for v in schema.get("enum") or [] if v is not None]
        if enum and declared and not any(has_type(v, declared) for v in enum):
            return (
                f"the document is inconsistent: every value of parameter {param.name}'s enum "
                f"contradicts its type {declared} ({enum[:3]!r}...)"
            )
    responses = raw.get("responses") if isinstance(raw, dict) else None
    if (
        isinstance(responses, dict)
        and responses
        and not any(str(code).startswith("2") or str(code) == "default" for code in responses)
    ):
        return (
            "the document declares no success answer (only "
            f"{', '.join(map(str, list(responses)[:4]))}), so the mock answers with one of those"
        )
    if op.body is not None and op.body_required and not op.body.is_json and not op.body.is_form:
        schema = document.resolve(op.body.schema)
        declared = schema_types(schema)[0] if isinstance(schema, dict) else None
        if declared not in (None, "string"):
            return (
                f"the document declares a {op.body.media_type} body as {declared}: Prism reads "
                "such a body as text, so no request passes it"
            )
    return None


def _holds_ref(value: Any) -> bool:
    """Whether a value has a "$ref" key at any depth."""
    if isinstance(value, dict):
        return "$ref" in value or any(_holds_ref(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_ref(v) for v in value)
    return False


def call_plan(document: ContractDocument) -> list[dict[str, Any]]:
    """For each Python client method: the arguments to call it with."""
    return _python_calls(document, planned_calls(document))


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


def _python_calls(document: ContractDocument, calls: list[PlannedCall]) -> list[dict[str, Any]]:
    from server.aiapi.python_client import argument_names, client_methods

    methods = {(op.route, op.method): (name, op) for name, op in client_methods(document)}
    entries = []
    for call in calls:
        name, op = methods[(call.operation.route, call.operation.method)]
        argument = {(p.name, p.location): n for p, n in argument_names(op)}
        arguments = {argument[(p.name, p.location)]: value for p, value in call.parameters}
        if op.body is not None and op.body_required:
            key = "body" if op.body.is_json else "data" if op.body.is_form else "content"
            arguments[key] = call.body
        entries.append(
            {"index": call.index, "method": name, "arguments": arguments, "route": op.route}
        )
    return entries


def _typescript_calls(folder: Path, calls: list[PlannedCall]) -> list[dict[str, Any]]:
    functions = sdk_functions(folder / "src" / "sdk.gen.ts")
    entries = []
    for call in calls:
        op = call.operation
        options: dict[str, Any] = {}
        for param, value in call.parameters:
            where = {"path": "path", "query": "query", "header": "headers"}[param.location]
            options.setdefault(where, {})[param.name] = value
        if op.body is not None and op.body_required and op.method not in BODILESS_METHODS:
            options["body"] = call.body  # openapi-ts read no GET or HEAD body (typescript_client)
        entries.append(
            {
                "index": call.index,
                "function": functions.get((op.method, op.route)),
                "options": options,
            }
        )
    return entries


def sdk_functions(sdk: Path) -> dict[tuple[str, str], str]:
    """(method, route) -> the SDK function openapi-ts wrote for it, read from sdk.gen.ts."""
    text = sdk.read_text(encoding="utf-8") if sdk.exists() else ""
    found: dict[tuple[str, str], str] = {}
    for chunk in re.split(r"\nexport const ", text)[1:]:
        name = re.match(r"\w+", chunk)
        method = re.search(r"\?\? client\)\.(?:sse\.)?(\w+)<", chunk)
        url = re.search(r"\burl: (\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')", chunk)
        if name and method and url:
            route = url.group(1)
            route = json.loads(route) if route.startswith('"') else route[1:-1].replace("\\'", "'")
            found.setdefault((method.group(1).lower(), route), name.group(0))
    return found


def _go_calls(document: ContractDocument, calls: list[PlannedCall]) -> list[dict[str, Any]]:
    """Positional arguments as the Go method takes them: the required parameters, the body
    (the signature has one whenever the operation does), then the optional parameters as
    the fields of its Params struct."""
    from server.aiapi.go_client import go_methods
    from server.aiapi.naming import UniqueNames, pascal

    names = {(op.route, op.method): name for name, op in go_methods(document)}
    entries = []
    for call in calls:
        op = call.operation
        given = {(p.name, p.location): value for p, value in call.parameters}
        arguments = [given[(p.name, p.location)] for p in op.parameters if p.required]
        if op.body is not None:
            body = call.body
            if not op.body_required and not op.body.is_json:
                body = None  # an optional blob or form is left empty, as the others leave it
            elif op.body.is_form:  # url.Values: each field's values as text
                body = {
                    k: [str(x) for x in (v if isinstance(v, list) else [v])]
                    for k, v in ((k, _form_text(v)) for k, v in body.items())
                }
            arguments.append(body)
        fields = UniqueNames()
        optional = {}
        for param in (p for p in op.parameters if not p.required):
            field_name = fields.claim(pascal(param.name, "Param"), "")
            if (param.name, param.location) in given:
                optional[field_name] = given[(param.name, param.location)]
        if optional:
            arguments.append(optional)
        entries.append(
            {"index": call.index, "method": names[(op.route, op.method)], "args": arguments}
        )
    return entries


def _form_text(value: Any) -> Any:
    """A form field as text (a list as repeated fields, as form style explodes it)."""
    if isinstance(value, list):
        return [_form_text(item) for item in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str | int | float) else json.dumps(value)


# ---------------------------------------------------------------------------------------
# Running the drivers and judging what they report


class ContractSession:
    """One Prism for one document, shared by the contract tests of every language; and a
    second one, started when needed, that answers with examples built from the schema
    where the first one's answers break it."""

    def __init__(self, document: ContractDocument) -> None:
        self.document = document
        self._stack = contextlib.ExitStack()
        self._scratch: Path | None = None
        self._mock: PrismMock | None = None
        self._repaired: PrismMock | None = None
        self._repairs: dict[Repair, Any] = {}
        self._calls: list[PlannedCall] | None = None

    def __enter__(self) -> ContractSession:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        for mock in (self._mock, self._repaired):
            if mock is not None:
                mock.stop()
        self._mock = self._repaired = None
        self._stack.close()

    @property
    def calls(self) -> list[PlannedCall]:
        if self._calls is None:
            self._calls = planned_calls(self.document)
        return self._calls

    def scratch(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(
                self._stack.enter_context(tempfile.TemporaryDirectory(prefix="headstart-contract-"))
            )
        return self._scratch

    def mock(self, repaired: bool = False) -> PrismMock:
        """The mock (alive: restarted if it crashed); `repaired`: the one answering with
        the examples built so far."""
        if repaired:
            if self._repaired is not None and self._repaired.repairs != self._repairs:
                self._repaired.stop()
                self._repaired = None
            if self._repaired is None:
                self._repaired = PrismMock(self.document, self.scratch(), self._repairs)
                self._repaired.start()
            elif not self._repaired.alive():
                self._repaired.restart()
            return self._repaired
        if self._mock is None:
            self._mock = PrismMock(self.document, self.scratch())
            self._mock.start()
        elif not self._mock.alive():
            self._mock.restart()
        return self._mock

    def test(self, language: str, folder: Path, timeout_s: float = 600) -> ContractTestResult:
        """Call every operation through the language's generated client and judge it."""
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        driver = _DRIVERS[language]
        headers, params = credentials(self.document)
        state = _Judging()
        pending = []
        for call in self.calls:
            if call.skip:
                outcome = (
                    "skipped: untestable route"
                    if "#fragment" in call.skip or "?query" in call.skip
                    else "skipped: no success answer (the document)"
                    if "no success answer" in call.skip
                    else "skipped: no request can pass (the document)"
                )
                state.outcomes[call.index] = (outcome, call.skip)
            else:
                pending.append(call)
        prepared = None
        if pending:  # Prism refuses a document without operations
            self.mock()
            work = self.scratch() / language
            if work.exists():
                shutil.rmtree(work)
            work.mkdir()
            prepared = driver.prepare(self.document, folder, work, timeout_s)
        for phase in ("static", "repaired", "dynamic"):
            batch = {"static": pending, "repaired": state.repaired, "dynamic": state.dynamic}[phase]
            extra = {"Prefer": "dynamic=true"} if phase == "dynamic" else {}
            while batch:
                if time.monotonic() > deadline:
                    return ContractTestResult(
                        False, time.perf_counter() - started, output="timed out"
                    )
                mock = self.mock(repaired=phase == "repaired")
                since = mock.log_size()
                reports = driver.run(
                    self.document, prepared, batch, mock.base_url, {**headers, **extra}, params,
                    max(deadline - time.monotonic(), 1),
                )  # fmt: skip
                logs = mock.request_logs(since)
                crashed = not mock.alive()
                batch = self._judge_batch(phase, batch, reports, logs, crashed, state)
                if batch and mock.restarts >= MAX_MOCK_RESTARTS:
                    for call in batch:
                        state.outcomes[call.index] = ("skipped: the mock crashed", "")
                    batch = []
        outcomes = state.outcomes
        counts: Counter[str] = Counter(outcome for outcome, _ in outcomes.values())
        by_index = {call.index: call for call in self.calls}
        failures = [
            f"{by_index[i].label}: {outcome}: {detail}"
            for i, (outcome, detail) in sorted(outcomes.items())
            if outcome != "ok" and not outcome.startswith("skipped")
        ]
        untested = [
            f"{by_index[i].label}: {outcome}: {detail}"
            for i, (outcome, detail) in sorted(outcomes.items())
            if outcome.startswith("skipped")
        ]
        output = "\n".join(failures[:20] + [f"note: {line}" for line in state.note_lines[:5]])
        return ContractTestResult(
            ok=not failures,
            seconds=time.perf_counter() - started,
            outcomes=counts,
            failures=failures,
            output=output,
            notes=state.notes,
            untested=untested,
        )

    def _repair(self, call: PlannedCall, answer: dict[str, Any]) -> bool:
        """Build an answer from the schema for the call's response; False if none fits."""
        found = response_media(
            self.document, call.raw, int(answer.get("status") or 0), str(answer.get("contentType"))
        )
        if found is None or external_refs(self.document.data):
            return False
        code, media_type, media = found
        key = (call.operation.route, call.operation.method, code, media_type)
        if key in self._repairs:
            return True
        judge = schema_judge(self.document)
        for full in (3, 1, 0):  # optional properties down to this depth, then fewer
            example = example_value(self.document, media.get("schema"), full=full)
            if _holds_ref(example):
                # Prism's ref parser follows a "$ref" key even in an example, and exits
                # (GitHub's SCIM members have a "$ref" property)
                continue
            if not judge.problems(media.get("schema"), example, limit=1):
                self._repairs[key] = example
                return True
        return False

    def _judge_batch(
        self,
        phase: str,
        batch: list[PlannedCall],
        reports: dict[int, dict[str, Any]],
        logs: list[str],
        crashed: bool,
        state: _Judging,
    ) -> list[PlannedCall]:
        """Judge one driver run; return the calls to run again after the mock crashed."""
        outcomes = state.outcomes
        sent = 0
        again: list[PlannedCall] = []
        blamed_crash = False
        for call in batch:
            report = reports.get(call.index)
            if report is None:
                if crashed:
                    again.append(call)
                else:
                    outcomes[call.index] = ("driver gave no report", "")
                continue
            log = ""
            if report.get("sent"):
                log = logs[sent] if sent < len(logs) else ""
                sent += 1
            kind = report.get("kind")
            detail = str(report.get("detail") or "")[:300]
            answer = report.get("answer") or {}
            if kind == "transport" and crashed:
                if not blamed_crash:
                    blamed_crash = True
                    outcomes[call.index] = ("skipped: the mock crashed on it", detail)
                else:
                    again.append(call)
                continue
            if kind == "ok":
                outcomes[call.index] = ("ok", "")
            elif kind == "status":
                body = str(answer.get("body") or "")
                status = int(answer.get("status") or 0)
                violations = [
                    line.split("Violation:", 1)[1].strip()
                    for line in log.splitlines()
                    if "Violation:" in line
                ]
                if status >= 500 and PRISM_ERROR in body:
                    reason = body.split(PRISM_ERROR, 1)[1].split('"', 1)[0]
                    outcomes[call.index] = (
                        f"skipped: the mock cannot answer ({reason})",
                        body[:200],
                    )
                elif (
                    status >= 500
                    and violations
                    and all(v.startswith("response") for v in violations)
                ):
                    # a 5xx to a request Prism found valid, its own answer breaking the
                    # document (Azure DataLake's HEAD: Prism wrote an x-ms-request-id
                    # against its pattern; a HEAD has no body to name Prism's error)
                    outcomes[call.index] = (
                        "skipped: the mock cannot answer (its answer broke the document)",
                        "; ".join(violations[:3]),
                    )
                else:
                    why = "; ".join(violations[:3]) or _prism_validation(body) or body[:300]
                    outcomes[call.index] = (f"mock answered {status}", why)
            elif kind == "invalid-answer":
                problems, source = judge_answer(self.document, call.raw, answer)
                if not problems:
                    outcomes[call.index] = ("answer did not validate", detail)
                elif phase == "static":
                    state.notes[f"static answer breaks the schema: {source}"] += 1
                    state.note_lines.append(f"{call.label}: {source}: {problems[0]}")
                    state.static[call.index] = problems[0]
                    if self._repair(call, answer):
                        state.notes["answered instead with an example built from the schema"] += 1
                        state.repaired.append(call)
                    else:
                        state.dynamic.append(call)
                elif phase == "repaired":
                    state.dynamic.append(call)  # Prism did not send the example as built
                else:
                    state.notes["Prism's dynamic answer breaks the schema too"] += 1
                    state.note_lines.append(f"{call.label}: dynamic answer: {problems[0]}")
                    outcomes[call.index] = (
                        "skipped: the mock's answers break the document's schema",
                        f"static: {state.static.get(call.index, '')}; dynamic: {problems[0]}",
                    )
            elif kind == "invalid-request":
                outcomes[call.index] = (
                    "the client's request validator refused the arguments",
                    detail,
                )
            elif kind == "missing":
                outcomes[call.index] = ("no client function for the operation", detail)
            elif kind == "transport":
                outcomes[call.index] = (f"transport: {report.get('error') or 'error'}", detail)
            else:
                outcomes[call.index] = (f"client raised {report.get('error') or 'error'}", detail)
        return again


@dataclass
class _Judging:
    """What one language's calls came to so far, across the mock's three ways to answer."""

    outcomes: dict[int, tuple[str, str]] = field(default_factory=dict)
    notes: Counter[str] = field(default_factory=Counter)
    note_lines: list[str] = field(default_factory=list)
    static: dict[int, str] = field(default_factory=dict)
    repaired: list[PlannedCall] = field(default_factory=list)
    dynamic: list[PlannedCall] = field(default_factory=list)


def _prism_validation(body: str) -> str:
    """The violations Prism lists in its own 422 answer, as one line."""
    try:
        problems = json.loads(body).get("validation") or []
    except (json.JSONDecodeError, AttributeError):
        return ""
    return "; ".join(
        f"{'.'.join(map(str, p.get('location') or []))}: {p.get('message')}"
        for p in problems[:3]
        if isinstance(p, dict)
    )


def run_contract_tests(
    document: ContractDocument, folder: Path, timeout_s: float = 600, language: str = "python"
) -> ContractTestResult:
    """Start Prism on the document and call every operation through one language's client."""
    with ContractSession(document) as session:
        try:
            return session.test(language, folder, timeout_s)
        except subprocess.TimeoutExpired:
            return ContractTestResult(False, 0.0, output="timed out")


# ---------------------------------------------------------------------------------------
# The drivers


class _Driver:
    language = ""

    def prepare(
        self, document: ContractDocument, folder: Path, work: Path, timeout_s: float
    ) -> Any:
        return folder

    def entries(
        self, document: ContractDocument, prepared: Any, calls: list[PlannedCall]
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def command(
        self, prepared: Any, base_url: str, plan_file: Path
    ) -> tuple[list[str], dict[str, str], Path | None]:
        raise NotImplementedError

    def run(
        self,
        document: ContractDocument,
        prepared: Any,
        calls: list[PlannedCall],
        base_url: str,
        headers: dict[str, str],
        params: dict[str, str],
        timeout_s: float,
    ) -> dict[int, dict[str, Any]]:
        plan_file = Path(tempfile.mkstemp(prefix="plan-", suffix=".json")[1])
        try:
            plan_file.write_text(
                json.dumps(
                    {"calls": self.entries(document, prepared, calls), "headers": headers,
                     "params": params, "base_url": base_url}
                ),
                encoding="utf-8",
            )  # fmt: skip
            command, env, cwd = self.command(prepared, base_url, plan_file)
            report_file = plan_file.with_suffix(".report.json")
            done = subprocess.run(
                [*command, str(plan_file), str(report_file)],
                capture_output=True, text=True, timeout=timeout_s, cwd=cwd, env=env,
            )  # fmt: skip
            reports: list[dict[str, Any]] = []
            if report_file.exists():
                with contextlib.suppress(json.JSONDecodeError):
                    reports = json.loads(report_file.read_text(encoding="utf-8") or "[]")
                report_file.unlink()
            if done.returncode != 0 and not reports:
                raise GeneratorError(
                    self.language, "the contract driver failed", done.stdout + done.stderr
                )
            return {int(r["index"]): r for r in reports}
        finally:
            plan_file.unlink(missing_ok=True)


class _PythonDriver(_Driver):
    language = "python"

    def entries(
        self, document: ContractDocument, prepared: Any, calls: list[PlannedCall]
    ) -> list[dict[str, Any]]:
        return _python_calls(document, calls)

    def command(
        self, prepared: Any, base_url: str, plan_file: Path
    ) -> tuple[list[str], dict[str, str], Path | None]:
        package: Path = prepared
        return (
            [sys.executable, "-m", "server.aiapi.contract_driver", str(package.resolve().parent),
             package.name],
            {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            Path(__file__).resolve().parents[2],
        )  # fmt: skip


class _TypeScriptDriver(_Driver):
    """The SDK's .ts files transpiled (TypeScript's transpileModule, no type check: tsc
    already checked them) to CommonJS in a scratch folder, then called by driver.cjs."""

    language = "typescript"

    def prepare(
        self, document: ContractDocument, folder: Path, work: Path, timeout_s: float
    ) -> Any:
        node_tool("tsc")
        modules = tools_folder() / "aiapi-node" / "node_modules"
        out = work / "js"
        done = subprocess.run(
            ["node", str(DRIVERS / "transpile.cjs"), str(modules / "typescript"),
             str((folder / "src").resolve()), str(out)],
            capture_output=True, text=True, timeout=timeout_s,
        )  # fmt: skip
        if done.returncode != 0:
            raise GeneratorError("typescript", "could not transpile the SDK", done.stderr)
        return (folder, out)

    def entries(
        self, document: ContractDocument, prepared: Any, calls: list[PlannedCall]
    ) -> list[dict[str, Any]]:
        return _typescript_calls(prepared[0], calls)

    def command(
        self, prepared: Any, base_url: str, plan_file: Path
    ) -> tuple[list[str], dict[str, str], Path | None]:
        modules = tools_folder() / "aiapi-node" / "node_modules"
        env = {**os.environ, "NODE_PATH": str(modules), "NO_COLOR": "1"}
        return ["node", str(DRIVERS / "driver.cjs"), str(prepared[1])], env, None


class _GoDriver(_Driver):
    """driver.go (reflection: each method found by name, each JSON argument decoded into
    its parameter's type) built beside a copy of the package."""

    language = "go"

    def prepare(
        self, document: ContractDocument, folder: Path, work: Path, timeout_s: float
    ) -> Any:
        go = go_tool("go")
        module = work / "module"
        shutil.copytree(folder, module)
        name = (module / "go.mod").read_text(encoding="utf-8").split()[1]
        (module / "contractdriver").mkdir()
        source = (DRIVERS / "driver.go").read_text(encoding="utf-8")
        (module / "contractdriver" / "main.go").write_text(
            source.replace('api "MODULE"', f'api "{name}"'), encoding="utf-8"
        )
        binary = work / "contract-driver"
        cache = tools_folder() / "aiapi-go-cache"
        env = {
            **os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local",
            "GO111MODULE": "on", "GOCACHE": str(cache / "build"), "GOPATH": str(cache / "path"),
        }  # fmt: skip
        done = subprocess.run(
            [go, "build", "-o", str(binary), "./contractdriver"],
            cwd=module, capture_output=True, text=True, timeout=timeout_s, env=env,
        )  # fmt: skip
        if done.returncode != 0:
            raise GeneratorError("go", "could not build the contract driver", done.stderr)
        return binary

    def entries(
        self, document: ContractDocument, prepared: Any, calls: list[PlannedCall]
    ) -> list[dict[str, Any]]:
        return _go_calls(document, calls)

    def command(
        self, prepared: Any, base_url: str, plan_file: Path
    ) -> tuple[list[str], dict[str, str], Path | None]:
        return [str(prepared)], dict(os.environ), None


_DRIVERS: dict[str, _Driver] = {
    "python": _PythonDriver(),
    "typescript": _TypeScriptDriver(),
    "go": _GoDriver(),
}
CONTRACT_LANGUAGES = tuple(_DRIVERS)


@contextlib.contextmanager
def contract_session(document: ContractDocument) -> Iterator[ContractSession]:
    session = ContractSession(document)
    try:
        yield session
    finally:
        session.close()
