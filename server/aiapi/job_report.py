"""What a job worker found, as the worker writes it (report.json) and the service shows it.

One model for both sides, so the status a user reads is exactly what the worker wrote.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from server.aiapi.document import ContractError, ContractProblem
from server.aiapi.model_parts import ModelReport
from server.aiapi.pipeline import ContractResult


class Problem(BaseModel):
    """One problem of an invalid document, at its line."""

    text: str = Field(description="As the CLI prints it: NAME:LINE: #/json/pointer: message")
    line: int | None = Field(None, description="1-based line in the document, when known")
    pointer: str = Field("", description="JSON pointer of the offending node ('' = the whole)")
    message: str


class CheckOutcome(BaseModel):
    """A checker's or the contract tests' verdict, with their output when they failed."""

    checker: str
    ok: bool
    seconds: float
    output: str = ""


class LanguageOutcome(BaseModel):
    language: str
    ok: bool
    generate_seconds: float
    generate_error: str | None = None
    check: CheckOutcome | None = None
    contract: CheckOutcome | None = None


class ModelPartsOutcome(BaseModel):
    """A language's model-written parts (with_model): how many pieces went in and which
    fell back to the generator's text, and why."""

    language: str
    kept: int = Field(description="Pieces the checks passed, now in the code")
    fell_back: int = Field(description="Pieces that kept the generator's text")
    fell_back_why: list[str] = Field(
        default_factory=list, description="`KIND NAME: why` per piece that fell back"
    )
    message: str | None = Field(
        None, description="Why no piece was asked for (the model did not answer, say)"
    )


class JobReport(BaseModel):
    """The worker's verdict: ok, or why not (error, problems, a language's outcome)."""

    ok: bool
    error: str | None = None
    problems: list[Problem] = Field(default_factory=list)
    title: str | None = None
    api_version: str | None = None
    languages: list[LanguageOutcome] = Field(default_factory=list)
    model_parts: list[ModelPartsOutcome] = Field(default_factory=list)
    has_result: bool = False


def pointer_text(pointer: tuple[str | int, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in pointer)


def problem_of(problem: ContractProblem, source: str) -> Problem:
    return Problem(
        text=problem.describe(source),
        line=problem.line,
        pointer=pointer_text(problem.pointer),
        message=problem.message,
    )


def invalid_document_report(
    error: ContractError, source: str, what: str = "not a valid OpenAPI 3.x document"
) -> JobReport:
    count = len(error.problems)
    return JobReport(
        ok=False,
        error=f"{source}: {what} ({count} problem{'s' if count != 1 else ''})",
        problems=[problem_of(p, source) for p in error.problems],
    )


def generated_report(result: ContractResult, zip_written: bool) -> JobReport:
    languages: list[LanguageOutcome] = []
    failures: list[str] = []
    for entry in result.languages:
        outcome = LanguageOutcome(
            language=entry.language,
            ok=entry.ok,
            generate_seconds=round(entry.generate_seconds, 3),
            generate_error=entry.generate_error,
        )
        if entry.check is not None:
            check = entry.check
            outcome.check = CheckOutcome(
                checker=check.checker,
                ok=check.ok,
                seconds=round(check.seconds, 3),
                output="" if check.ok else check.output,
            )
        if entry.contract is not None:
            tested = entry.contract
            outcome.contract = CheckOutcome(
                checker="contract tests against Prism",
                ok=tested.ok,
                seconds=round(tested.seconds, 3),
                output="" if tested.ok else tested.output,
            )
        languages.append(outcome)
        if entry.generate_error:
            failures.append(f"{entry.language}: generation failed")
        elif outcome.check is not None and not outcome.check.ok:
            failures.append(f"{entry.language}: {outcome.check.checker} failed")
        elif outcome.contract is not None and not outcome.contract.ok:
            failures.append(f"{entry.language}: contract tests failed")
    return JobReport(
        ok=result.ok,
        error="; ".join(failures) or None,
        title=result.document.title,
        api_version=result.document.api_version,
        languages=languages,
        has_result=zip_written,
    )


def model_parts_outcome(report: ModelReport) -> ModelPartsOutcome:
    return ModelPartsOutcome(
        language=report.language,
        kept=report.kept,
        fell_back=report.fell_back,
        fell_back_why=[f"{p.kind} {p.name}: {p.reason}" for p in report.pieces if not p.kept],
        message=report.message,
    )


def write_report(report: JobReport, path: Path) -> None:
    """Written whole then renamed, so the service never reads half a report."""
    partial = path.with_suffix(".partial")
    partial.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    partial.replace(path)
