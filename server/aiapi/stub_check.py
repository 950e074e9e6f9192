"""The server stubs and test skeletons, run for real: servers on a port, real requests.

- `route_check`: every route and method of the document, sent to a stub whose handlers
  are as generated, must reach its handler and get 501 (not 404, 405 or 422: the stub
  routes it and accepts the contract's parameters and bodies).
- `run_python_tests`: the Python test skeleton (pytest) against a base URL.
- `check_python_stub`: the Python stub served twice, as generated (route_check) and with
  handlers answering the contract's examples, against which the Python test skeleton
  (the generated client) runs.
- `check_go_stub`: the Go stub built with its Unimplemented service (route_check) and with
  a service answering the contract's examples, against which the Go test skeleton runs.
- `check_python_tests_against_prism`: the Python test skeleton against a Prism mock.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from server.aiapi.contract import ContractTestResult, credentials
from server.aiapi.contract_examples import example_value
from server.aiapi.contract_mock import free_port, prism_command
from server.aiapi.document import ContractDocument
from server.aiapi.stub_operations import (
    base_url_variable,
    response_example,
    stub_operations,
)
from server.aiapi.tools import GeneratorError, go_tool

ROOT = Path(__file__).resolve().parents[2]
NOT_IMPLEMENTED = 501


@contextlib.contextmanager
def serving(
    command: list[str],
    port: int,
    log: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float = 120,
) -> Iterator[str]:
    """Start a server process, wait until it listens on the port, stop it (its group) after."""
    with log.open("w") as log_file:
        process = subprocess.Popen(
            command, stdout=log_file, stderr=subprocess.STDOUT, cwd=cwd, env=env,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise GeneratorError("server", f"{command[0]} exited", log.read_text()[-3000:])
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise GeneratorError("server", f"nothing listened within {timeout_s:.0f} s")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _result(started: float, outcomes: Counter[str], failures: list[str]) -> ContractTestResult:
    return ContractTestResult(
        ok=not failures,
        seconds=time.perf_counter() - started,
        outcomes=outcomes,
        failures=failures,
        output="\n".join(failures[:20]),
    )


# ---------------------------------------------------------------------------------------
# Every route and method, by hand


def example_request(document: ContractDocument, stub: Any) -> dict[str, Any]:
    """The request of one operation with example values: method, path, query, headers, body."""
    op = stub.op
    path = op.route
    query: dict[str, Any] = {}
    headers, credential_params = credentials(document)
    query.update(credential_params)
    headers = dict(headers)
    for param in op.parameters:
        if not param.required:
            continue
        value = example_value(document, param.schema)
        text = [_text(v) for v in value] if isinstance(value, list) else _text(value)
        if param.location == "path":
            joined = ",".join(text) if isinstance(text, list) else text
            path = path.replace("{" + param.name + "}", quote(joined, safe=""))
        elif param.location == "query":
            query[param.name] = text
        else:
            headers[param.name] = ",".join(text) if isinstance(text, list) else text
    request: dict[str, Any] = {"method": op.method.upper(), "url": path, "params": query}
    if op.body is not None:
        value = example_value(document, op.body.schema)
        if op.body.is_json:
            request["json"] = value
        elif op.body.is_form and "multipart" not in (op.body.media_type or ""):
            request["data"] = {k: _text(v) for k, v in (value or {}).items()}
        else:
            request["content"] = b"a"
            headers["Content-Type"] = op.body.media_type or "application/octet-stream"
    request["headers"] = headers
    return request


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def route_check(document: ContractDocument, base_url: str) -> ContractTestResult:
    """Each routed operation, sent with example values, must be answered 501 by its handler."""
    import httpx

    started = time.perf_counter()
    outcomes: Counter[str] = Counter()
    failures = []
    with httpx.Client(base_url=base_url, timeout=60.0) as http:
        for stub in stub_operations(document):
            if stub.skip:
                outcomes["skipped: untestable route"] += 1
                continue
            request = example_request(document, stub)
            try:
                answer = http.request(**request)
            except httpx.HTTPError as exc:
                outcomes[f"transport: {type(exc).__name__}"] += 1
                failures.append(f"{stub.label}: {type(exc).__name__}: {exc}")
                continue
            if answer.status_code == NOT_IMPLEMENTED:
                outcomes["reached its handler (501)"] += 1
            else:
                outcomes[f"answered {answer.status_code}"] += 1
                failures.append(
                    f"{stub.label}: answered {answer.status_code}, not 501: {answer.text[:300]}"
                )
    return _result(started, outcomes, failures)


# ---------------------------------------------------------------------------------------
# The test skeletons, run


def run_python_tests(tests: Path, base_url: str, variable: str, client_folder: Path,
                     timeout_s: float) -> ContractTestResult:  # fmt: skip
    """pytest over the skeleton with VARIABLE=base_url; one outcome per test."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="headstart-pytest-") as scratch:
        config = Path(scratch) / "pytest.ini"
        config.write_text("[pytest]\n", encoding="utf-8")
        report = Path(scratch) / "report.xml"
        env = {
            **os.environ,
            variable: base_url,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # the skeleton needs pytest alone
            "PYTHONPATH": str(client_folder.resolve()),
        }
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(config),
             "--rootdir", str(tests.resolve().parent), f"--junitxml={report}",
             str(tests.resolve())],
            capture_output=True, text=True, timeout=timeout_s, cwd=scratch, env=env,
        )  # fmt: skip
        if not report.exists():
            output = (done.stdout + done.stderr)[-3000:]
            return ContractTestResult(False, time.perf_counter() - started, output=output)
        return _junit_result(report, started, done.stdout + done.stderr)


def _junit_result(report: Path, started: float, output: str) -> ContractTestResult:
    outcomes: Counter[str] = Counter()
    failures = []
    for case in ElementTree.parse(report).iter("testcase"):
        name = case.get("name", "?")
        problem = next((c for c in case if c.tag in ("failure", "error")), None)
        skipped = next((c for c in case if c.tag == "skipped"), None)
        if problem is not None:
            outcomes["failed"] += 1
            failures.append(f"{name}: {(problem.get('message') or '')[:300]}")
        elif skipped is not None:
            outcomes["skipped"] += 1
        else:
            outcomes["passed"] += 1
    if not outcomes:
        failures.append(f"no test ran:\n{output[-2000:]}")
    return _result(started, outcomes, failures)


def run_go_tests(module: Path, package: str, base_url: str, variable: str,
                 timeout_s: float) -> ContractTestResult:  # fmt: skip
    """go test -json over the skeleton's package with VARIABLE=base_url."""
    from server.aiapi.go_server import go_environment

    started = time.perf_counter()
    env = {**go_environment(), variable: base_url}
    done = subprocess.run(
        [go_tool("go"), "test", "-count=1", "-json", f"./{package}"],
        capture_output=True, text=True, timeout=timeout_s, cwd=module, env=env,
    )  # fmt: skip
    outcomes: Counter[str] = Counter()
    failures = []
    output: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        test = event.get("Test")
        if not test:
            continue
        if event.get("Action") == "output":
            output.setdefault(test, []).append(event.get("Output", ""))
        elif event.get("Action") in ("pass", "fail", "skip"):
            action = {"pass": "passed", "fail": "failed", "skip": "skipped"}[event["Action"]]
            outcomes[action] += 1
            if action == "failed":
                failures.append(f"{test}: {''.join(output.get(test, []))[-300:].strip()}")
    if not outcomes:
        failures.append(f"no test ran:\n{(done.stdout + done.stderr)[-2000:]}")
    return _result(started, outcomes, failures)


# ---------------------------------------------------------------------------------------
# The stubs, served


def stub_examples(document: ContractDocument) -> dict[str, dict[str, Any]]:
    """What each Python handler answers in the example run, by method name."""
    examples = {}
    for stub in stub_operations(document):
        if stub.skip:
            continue
        result = stub.op.result
        kind = "none" if result.media_type is None else "json" if result.is_json else "bytes"
        value = None if kind == "none" else response_example(document, stub)
        examples[stub.python_name] = {"kind": kind, "value": value}
    return examples


def check_python_stub(
    document: ContractDocument,
    server_package: Path,
    tests: Path,
    client_folder: Path,
    timeout_s: float = 600,
) -> ContractTestResult:
    """The stub as generated answers 501 on every route; with handlers answering the
    contract's examples, the test skeleton (the generated client) passes against it."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "server.aiapi.stub_serve",
               str(server_package.resolve().parent), server_package.name]  # fmt: skip
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryDirectory(prefix="headstart-stub-") as scratch:
        log = Path(scratch) / "stub.log"
        port = free_port()
        with serving([*command, str(port)], port, log, cwd=ROOT, env=env) as base_url:
            routes = route_check(document, base_url)
        examples = Path(scratch) / "examples.json"
        examples.write_text(json.dumps(stub_examples(document)), encoding="utf-8")
        port = free_port()
        with serving([*command, str(port), str(examples)], port, log, cwd=ROOT, env=env) as url:
            tested = run_python_tests(
                tests, url, base_url_variable(document), client_folder, timeout_s
            )
    return _merge(started, routes, tested, "with example handlers, the tests")


def _merge(started: float, routes: ContractTestResult, tested: ContractTestResult,
           what: str) -> ContractTestResult:  # fmt: skip
    outcomes: Counter[str] = Counter()
    for name, count in routes.outcomes.items():
        outcomes[f"as generated: {name}"] += count
    for name, count in tested.outcomes.items():
        outcomes[f"{what} {name}"] += count
    failures = [f"as generated: {f}" for f in routes.failures]
    failures += [f"{what}: {f}" for f in tested.failures]
    if tested.output and not tested.failures and not tested.ok:
        failures.append(f"{what}: {tested.output}")
    return _result(started, outcomes, failures)


def check_python_tests_against_prism(document: ContractDocument, tests: Path,
                                     client_folder: Path,
                                     timeout_s: float = 600) -> ContractTestResult:  # fmt: skip
    """The Python test skeleton against a Prism mock of the document."""
    prism = prism_command()
    with tempfile.TemporaryDirectory(prefix="headstart-prism-") as scratch:
        port = free_port()
        command = [prism, "mock", "--host", "127.0.0.1", "--port", str(port), "--errors",
                   "false", str(document.path.resolve())]  # fmt: skip
        with serving(command, port, Path(scratch) / "prism.log") as base_url:
            return run_python_tests(
                tests, base_url, base_url_variable(document), client_folder, timeout_s
            )


def check_go_stub(document: ContractDocument, module: Path, timeout_s: float = 600
                  ) -> ContractTestResult:  # fmt: skip
    """The Go stub built twice in a copy of the module: with Unimplemented (route_check),
    and with a service answering the contract's examples, which the Go test skeleton
    (the generated Go client; written into the copy if the module has none) runs against."""
    from server.aiapi.go_server import (
        example_service_main,
        go_environment,
        module_name,
        unimplemented_main,
    )
    from server.aiapi.test_skeletons import GO_TESTS_PACKAGE, generate_go_tests

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="headstart-gostub-") as scratch:
        copy = Path(scratch) / "module"
        shutil.copytree(module, copy)
        if not (copy / GO_TESTS_PACKAGE).is_dir():
            generate_go_tests(document, copy)
        binaries = {}
        for name, source in (
            ("unimplemented", unimplemented_main(document, module_name(module))),
            ("examples", example_service_main(document, module_name(module))),
        ):
            folder = copy / "cmd" / name
            folder.mkdir(parents=True)
            (folder / "main.go").write_text(source, encoding="utf-8")
            binary = Path(scratch) / name
            done = subprocess.run(
                [go_tool("go"), "build", "-o", str(binary), f"./cmd/{name}"],
                capture_output=True, text=True, timeout=timeout_s, cwd=copy,
                env=go_environment(),
            )  # fmt: skip
            if done.returncode != 0:
                output = f"go build of the {name} stub failed:\n{done.stdout}{done.stderr}"
                return ContractTestResult(False, time.perf_counter() - started, output=output)
            binaries[name] = binary
        log = Path(scratch) / "stub.log"
        port = free_port()
        address = f"127.0.0.1:{port}"
        with serving([str(binaries["unimplemented"]), address], port, log) as base_url:
            routes = route_check(document, base_url)
        port = free_port()
        address = f"127.0.0.1:{port}"
        with serving([str(binaries["examples"]), address], port, log) as base_url:
            tested = run_go_tests(
                copy, GO_TESTS_PACKAGE, base_url, base_url_variable(document), timeout_s
            )
    return _merge(started, routes, tested, "with an example service, the tests")
