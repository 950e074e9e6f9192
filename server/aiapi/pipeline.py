"""Validate, generate, verify: the stages every caller (CLI, corpus benchmark) runs.

Each stage of each language is timed and either passes or records why not, so that one
language failing never hides the others' results.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from server.aiapi.contract import CONTRACT_LANGUAGES, ContractSession, ContractTestResult
from server.aiapi.document import ContractDocument
from server.aiapi.go_client import generate_go
from server.aiapi.python_client import generate_python
from server.aiapi.scaffold import KINDS as KINDS  # the kinds generate_contract writes
from server.aiapi.scaffold import ScaffoldResult, generate_scaffolds
from server.aiapi.tools import GeneratorError, ToolMissing
from server.aiapi.typescript_client import generate_typescript
from server.aiapi.verify import CheckResult, check_go, check_python, check_typescript

LANGUAGES = ("python", "typescript", "go")
# Whose client the contract tests call: all three, against one Prism per document.
CONTRACT_TESTED = CONTRACT_LANGUAGES

GENERATORS: dict[str, Callable[[ContractDocument, Path], Path]] = {
    "python": generate_python,
    "typescript": generate_typescript,
    "go": generate_go,
}
CHECKERS: dict[str, Callable[[Path, float], CheckResult]] = {
    "python": check_python,
    "typescript": check_typescript,
    "go": check_go,
}


@dataclass
class LanguageResult:
    language: str
    folder: Path | None = None
    generate_seconds: float = 0.0
    generate_error: str | None = None
    check: CheckResult | None = None
    contract: ContractTestResult | None = None

    @property
    def ok(self) -> bool:
        return (
            self.generate_error is None
            and (self.check is None or self.check.ok)
            and (self.contract is None or self.contract.ok)
        )


@dataclass
class ContractResult:
    document: ContractDocument
    out: Path
    languages: list[LanguageResult] = field(default_factory=list)
    # the server stubs and test skeletons (kinds "server" and "tests"), by language
    scaffolds: list[ScaffoldResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.languages) and all(s.ok for s in self.scaffolds)


def generate_contract(
    document: ContractDocument,
    out: Path,
    languages: tuple[str, ...] = LANGUAGES,
    *,
    verify: bool = False,
    contract: bool = False,
    check_timeout_s: float = 600,
    progress: Callable[[str], None] | None = None,
    kinds: tuple[str, ...] = ("client",),
    react_query: bool = False,
) -> ContractResult:
    """Generate each language into out/<language>, replacing what was there, and check it.

    `kinds` (of KINDS) adds a server stub and/or a test skeleton beside each client (the
    client is always written: both build on it), checked with `verify` and served and run
    with `contract` (server/aiapi/scaffold.py). `react_query` adds TanStack React Query
    options to the TypeScript client (server/aiapi/typescript_react_query.py)."""
    result = ContractResult(document, out)
    with ContractSession(document) as session:  # Prism starts at the first contract test
        for language in languages:
            _generate_language(
                document, out, language, result, session, verify=verify, contract=contract,
                check_timeout_s=check_timeout_s, progress=progress, react_query=react_query,
            )  # fmt: skip
            if any(kind != "client" for kind in kinds):
                result.scaffolds += generate_scaffolds(
                    document, out, language, kinds, verify=verify, run=contract,
                    timeout_s=check_timeout_s, progress=progress,
                )  # fmt: skip
    return result


def _generate_language(
    document: ContractDocument,
    out: Path,
    language: str,
    result: ContractResult,
    session: ContractSession,
    *,
    verify: bool,
    contract: bool,
    check_timeout_s: float,
    progress: Callable[[str], None] | None,
    react_query: bool = False,
) -> None:
    """One language of generate_contract: generate, check, call against the mock."""
    folder = out / language
    if folder.exists():
        shutil.rmtree(folder)
    entry = LanguageResult(language)
    result.languages.append(entry)
    generator = GENERATORS[language]
    if language == "typescript" and react_query:
        generator = functools.partial(generate_typescript, react_query=True)
    started = time.perf_counter()
    try:
        entry.folder = generator(document, folder)
    except GeneratorError as exc:
        entry.generate_error = str(exc)
    except Exception as exc:  # a generator's crash is this language's failure, not ours
        entry.generate_error = f"{language}: {type(exc).__name__}: {exc}"
    entry.generate_seconds = time.perf_counter() - started
    if progress is not None:
        state = "failed" if entry.generate_error else f"{entry.generate_seconds:.1f} s"
        progress(f"{language}: generated ({state})")
    if verify and entry.folder is not None:
        entry.check = CHECKERS[language](entry.folder, check_timeout_s)
        if progress is not None:
            verdict = "passed" if entry.check.ok else "FAILED"
            progress(f"{language}: {entry.check.checker} {verdict} ({entry.check.seconds:.1f} s)")
    if contract and language in CONTRACT_TESTED and entry.folder is not None:
        try:
            entry.contract = session.test(language, entry.folder, check_timeout_s)
        except ToolMissing:
            raise
        except GeneratorError as exc:
            entry.contract = ContractTestResult(False, 0.0, output=str(exc))
        except subprocess.TimeoutExpired:
            entry.contract = ContractTestResult(False, check_timeout_s, output="timed out")
        if progress is not None:
            tested = entry.contract
            verdict = "passed" if tested.ok else "FAILED"
            counts = ", ".join(f"{n} {what}" for what, n in sorted(tested.outcomes.items()))
            progress(
                f"{language}: contract tests against Prism {verdict} ({counts or 'no calls'};"
                f" {tested.seconds:.1f} s)"
            )


def write_zip(folder: Path, archive: Path) -> Path:
    """The output folder as a zip whose bytes depend only on the files (fixed dates, order)."""
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(path.relative_to(folder).as_posix(), (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            bundle.writestr(info, path.read_bytes())
    return archive
