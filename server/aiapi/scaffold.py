"""Server stubs and test skeletons beside each language's client: generate, check, run.

What `generate_contract(..., kinds=...)` calls for each language once its client is
written (pipeline.py); the client is always written first, as both build on it (the
Python stub copies its models, the Go stub imports its structs, the TypeScript stub uses
openapi-ts's types, and every test skeleton calls it).

    kind     python                     typescript             go
    server   python/<title>_server/     typescript/server/     go/server/
    tests    python/tests/              typescript/tests/      go/contracttest/

Checked by the language's own checker (mypy --strict, tsc --noEmit with Node's and
vitest's types, go vet), and run (stub_check.py): the Python and Go stubs are served,
as generated (every route answers 501) and with handlers answering the contract's
examples, against which the test skeleton of the same language (its generated client)
runs; the Python test skeleton also runs against a Prism mock of the document.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from server.aiapi.contract import ContractTestResult
from server.aiapi.document import ContractDocument
from server.aiapi.python_client import package_name
from server.aiapi.tools import GeneratorError, ToolMissing, node_tool, tools_folder
from server.aiapi.verify import CheckResult, _run, check_python, typescript_module_paths

KINDS = ("client", "server", "tests")
WHAT = {"server": "server stub", "tests": "test skeleton"}


@dataclass
class ScaffoldResult:
    language: str
    kind: str  # "server" or "tests"
    folder: Path | None = None
    generate_seconds: float = 0.0
    generate_error: str | None = None
    check: CheckResult | None = None
    run: ContractTestResult | None = None  # served / run for real (see the module)
    run_what: str = ""

    @property
    def label(self) -> str:
        return f"{self.language} {WHAT[self.kind]}"

    @property
    def ok(self) -> bool:
        return (
            self.generate_error is None
            and (self.check is None or self.check.ok)
            and (self.run is None or self.run.ok)
        )


def parse_kinds(text: str) -> tuple[str, ...]:
    """'server,tests' -> ('client', 'server', 'tests'): the client always, in KINDS' order.
    Raises ValueError naming what is unknown."""
    asked = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(asked - set(KINDS))
    if unknown or not asked:
        raise ValueError(", ".join(unknown) or "(none)")
    return tuple(kind for kind in KINDS if kind in asked or kind == "client")


def generate_scaffolds(
    document: ContractDocument,
    out: Path,
    language: str,
    kinds: tuple[str, ...],
    *,
    verify: bool = False,
    run: bool = False,
    timeout_s: float = 600,
    progress: Callable[[str], None] | None = None,
) -> list[ScaffoldResult]:
    """The server stub and/or test skeleton of one language into out/<language>, whose
    client is already there; checked with `verify`, served and run with `run`."""
    folder = out / language
    results: dict[str, ScaffoldResult] = {}
    for kind in ("server", "tests"):
        if kind not in kinds:
            continue
        entry = ScaffoldResult(language, kind)
        results[kind] = entry
        started = time.perf_counter()
        try:
            entry.folder = _generate(document, folder, language, kind)
        except ToolMissing:
            raise
        except GeneratorError as exc:
            entry.generate_error = str(exc)
        except Exception as exc:  # a template's crash is this output's failure, not ours
            entry.generate_error = f"{language} {kind}: {type(exc).__name__}: {exc}"
        entry.generate_seconds = time.perf_counter() - started
        _say(progress, entry, "generated", entry.generate_error is None, entry.generate_seconds)
    for entry in results.values():
        if entry.folder is None:
            continue
        if verify:
            entry.check = CHECKERS[language](entry.folder, timeout_s)
            _say(progress, entry, entry.check.checker, entry.check.ok, entry.check.seconds)
        if run and (entry.check is None or entry.check.ok):
            _run_for_real(document, folder, language, entry, results, timeout_s)
            if entry.run is not None:
                counts = ", ".join(f"{n} {what}" for what, n in sorted(entry.run.outcomes.items()))
                _say(
                    progress, entry, f"{entry.run_what} ({counts})", entry.run.ok, entry.run.seconds
                )
    return list(results.values())


def _say(progress: Callable[[str], None] | None, entry: ScaffoldResult, what: str, ok: bool,
         seconds: float) -> None:  # fmt: skip
    if progress is not None:
        verdict = "passed" if ok else "FAILED"
        if what == "generated":
            verdict = f"{seconds:.1f} s" if ok else "failed"
            progress(f"{entry.label}: generated ({verdict})")
        else:
            progress(f"{entry.label}: {what} {verdict} ({seconds:.1f} s)")


def client_package(document: ContractDocument, folder: Path) -> Path:
    package = folder / package_name(document)
    if not package.is_dir():
        raise GeneratorError("python", f"the client {package.name} is missing: generate it first")
    return package


def _generate(document: ContractDocument, folder: Path, language: str, kind: str) -> Path:
    from server.aiapi.go_server import generate_go_server
    from server.aiapi.python_server import generate_python_server
    from server.aiapi.test_skeletons import (
        generate_go_tests,
        generate_python_tests,
        generate_typescript_tests,
    )
    from server.aiapi.typescript_server import generate_typescript_server

    if language == "python":
        client = client_package(document, folder)
        if kind == "server":
            return generate_python_server(document, folder, client)
        return generate_python_tests(document, folder, client)
    if not folder.is_dir():
        raise GeneratorError(language, "the client is missing: generate it first")
    if language == "go":
        return (
            generate_go_server(document, folder)
            if kind == "server"
            else generate_go_tests(document, folder)
        )
    written = (
        generate_typescript_server(document, folder)
        if kind == "server"
        else generate_typescript_tests(document, folder)
    )
    prettier(folder, written.name)
    return written


def prettier(folder: Path, part: str) -> None:
    done = subprocess.run(
        [node_tool("prettier"), "--write", "--log-level=warn", "--no-config",
         "--print-width=100", part, "package.json", "tsconfig.json"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        raise GeneratorError("typescript", "prettier failed", done.stdout + done.stderr)


# ---------------------------------------------------------------------------------------
# Checks


def check_typescript_part(folder: Path, timeout_s: float = 600) -> CheckResult:
    """tsc --noEmit over src/ and the server/ or tests/ beside it, with Node's types and
    vitest from .tools/aiapi-scaffold."""
    module = folder.parent
    scaffold = tools_folder() / "aiapi-scaffold" / "node_modules"
    if not (scaffold / "@types" / "node").exists():
        raise ToolMissing(
            "typescript",
            "@types/node and vitest are not installed: run server/aiapi/install_tools.sh",
        )
    tsc = node_tool("tsc")
    paths = {**typescript_module_paths(), "vitest": [str(scaffold / "vitest")]}
    with tempfile.TemporaryDirectory(prefix="headstart-tsc-") as scratch:
        config = Path(scratch) / "tsconfig.json"
        config.write_text(
            json.dumps(
                {
                    "extends": str((module / "tsconfig.json").resolve()),
                    "compilerOptions": {
                        "paths": paths,
                        "typeRoots": [str(scaffold / "@types")],
                        "types": ["node"],
                    },
                    "include": [
                        str(module.resolve() / "src" / "**" / "*.ts"),
                        str(folder.resolve() / "**" / "*.ts"),
                    ],
                }
            ),
            encoding="utf-8",
        )
        return _run("typescript", "tsc --noEmit", [tsc, "-p", str(config)], module, timeout_s)


def check_go_package(folder: Path, timeout_s: float = 600) -> CheckResult:
    """go vet over one package of the client's module (server/ or contracttest/)."""
    from server.aiapi.go_server import go_environment
    from server.aiapi.tools import go_tool

    command = [go_tool("go"), "vet", f"./{folder.name}"]
    return _run("go", "go vet", command, folder.parent, timeout_s, go_environment())


CHECKERS: dict[str, Callable[[Path, float], CheckResult]] = {
    "python": check_python,
    "typescript": check_typescript_part,
    "go": check_go_package,
}


# ---------------------------------------------------------------------------------------
# Runs


def _run_for_real(document: ContractDocument, folder: Path, language: str,
                  entry: ScaffoldResult, results: dict[str, ScaffoldResult],
                  timeout_s: float) -> None:  # fmt: skip
    from server.aiapi import stub_check
    from server.aiapi.test_skeletons import generate_python_tests

    try:
        if language == "python" and entry.kind == "server" and entry.folder is not None:
            entry.run_what = "served, its tests against it"
            client = client_package(document, folder)
            tests = results.get("tests")
            if tests is not None and tests.folder is not None:
                entry.run = stub_check.check_python_stub(
                    document, entry.folder, tests.folder, folder, timeout_s
                )
            else:
                with tempfile.TemporaryDirectory(prefix="headstart-skeleton-") as scratch:
                    skeleton = generate_python_tests(document, Path(scratch), client)
                    entry.run = stub_check.check_python_stub(
                        document, entry.folder, skeleton, folder, timeout_s
                    )
        elif language == "python" and entry.kind == "tests" and entry.folder is not None:
            entry.run_what = "pytest against Prism"
            entry.run = stub_check.check_python_tests_against_prism(
                document, entry.folder, folder, timeout_s
            )
        elif language == "go" and entry.kind == "server":
            entry.run_what = "served, its tests against it"
            entry.run = stub_check.check_go_stub(document, folder, timeout_s)
    except ToolMissing:
        raise
    except (GeneratorError, subprocess.TimeoutExpired) as exc:
        entry.run = ContractTestResult(False, 0.0, output=str(exc))
