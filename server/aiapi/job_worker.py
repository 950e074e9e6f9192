"""One job of the job service, in a process of its own: python -m server.aiapi.job_worker DIR.

DIR holds job.json (the request) and the document; the worker writes progress.log while it
runs, out/ and result.zip, and last report.json. A process per job keeps generation (CPU
work and subprocesses) off the service's event loop, and lets a timeout end the job and
everything it started: SIGTERM turns into an exception here, so the pipeline's `finally`
blocks stop their tools (Prism runs in a session of its own); the service then kills the
whole process group.
"""

from __future__ import annotations

import inspect
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from pydantic import BaseModel

from server.aiapi.document import ContractDocument, ContractError, load_document
from server.aiapi.job_bundle import write_bundle
from server.aiapi.job_report import (
    JobReport,
    ModelPartsOutcome,
    generated_report,
    invalid_document_report,
    model_parts_outcome,
    write_report,
)
from server.aiapi.local_refs import outside_references
from server.aiapi.model_parts import model_options
from server.aiapi.model_writers import write_model_parts
from server.aiapi.pipeline import ContractResult, generate_contract
from server.aiapi.tools import ToolMissing
from server.config import SettingsError

DEFAULT_KINDS = ("client",)


class JobRequest(BaseModel):
    """job.json: what the service accepted, checked there."""

    document: str
    languages: list[str]
    kinds: list[str]
    verify: bool
    timeout_s: float
    with_model: bool = False
    """Let the model write parts of the output (server/aiapi/model_writers.py)."""
    model_settings: str = "{}"
    """The service's own ServiceSettings.model_settings: never a request's."""
    react_query: bool = False
    """TanStack React Query options in the TypeScript client (typescript_react_query.py)."""


class JobStopped(BaseException):
    """SIGTERM: unwind so that the tools this job started are stopped on the way out."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise JobStopped(signum)


def run_job(folder: Path) -> JobReport:
    request = JobRequest.model_validate_json((folder / "job.json").read_text(encoding="utf-8"))
    progress = (folder / "progress.log").open("a", encoding="utf-8", buffering=1)

    def say(message: str) -> None:
        progress.write(message + "\n")

    try:
        outside = outside_references(folder / request.document)
        if outside:
            error = ContractError(folder / request.document, outside)
            return invalid_document_report(error, request.document, "not self-contained")
        try:
            document = load_document(folder / request.document)
        except ContractError as exc:
            return invalid_document_report(exc, request.document)
        say(f"{document.title} {document.api_version} (OpenAPI {document.openapi_version})")
        options: dict[str, Any] = {}
        if tuple(request.kinds) != DEFAULT_KINDS:
            if "kinds" not in inspect.signature(generate_contract).parameters:
                return JobReport(ok=False, error="this server generates clients only")
            options["kinds"] = tuple(request.kinds)
        if request.react_query:
            options["react_query"] = True
        try:
            result = generate_contract(
                document,
                folder / "out",
                tuple(request.languages),
                verify=request.verify,
                contract=request.verify,
                check_timeout_s=request.timeout_s,
                progress=say,
                **options,
            )
        except ToolMissing as exc:
            return JobReport(ok=False, error=f"a tool is missing on the server: {exc}")
        report = generated_report(result, zip_written=False)
        if request.with_model:
            report.model_parts = model_parts(document, folder / "out", result, request, say)
        if any(entry.folder is not None for entry in result.languages):
            write_bundle(result, report, request.document, folder / "result.zip")
            report.has_result = True
        say("done")
        return report
    finally:
        progress.close()


def model_parts(
    document: ContractDocument,
    out: Path,
    result: ContractResult,
    request: JobRequest,
    say: Callable[[str], None],
) -> list[ModelPartsOutcome]:
    """The model-written parts over each language generated, from the service's own
    backend settings (its HEADSTART_* variables and model_settings)."""
    try:
        options = model_options(request.model_settings)
    except (SettingsError, ValueError) as exc:
        return [
            ModelPartsOutcome(language=language, kept=0, fell_back=0, message=str(exc))
            for language in request.languages
        ]
    generated = [e.language for e in result.languages if e.folder is not None]
    reports = write_model_parts(document, out, generated, options, progress=say)
    for report in reports:
        say(report.summary())
    return [model_parts_outcome(report) for report in reports]


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _stop)
    folder = Path(argv[0])
    try:
        report = run_job(folder)
    except JobStopped:
        return 143
    except Exception as exc:  # the job fails with our words, not the worker's silence
        traceback.print_exc()
        report = JobReport(ok=False, error=f"internal error: {type(exc).__name__}: {exc}")
    write_report(report, folder / "report.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
