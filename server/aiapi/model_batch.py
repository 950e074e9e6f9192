"""One batch of a TypeScript or Go client's model-written parts: the comments on its
operations, the test skeleton's example values and the README, asked for together (so the
budget and the bound on requests in flight cover all of them) and then each kind applied
by its own checks, in that order: the skeleton's check compiles against the client with
its comments already in."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from server.aiapi.document import ContractDocument
from server.aiapi.model_parts import (
    Answer,
    ModelOptions,
    ModelReport,
    PieceOutcome,
    ask_all,
    chat_prompt,
    request_for,
)
from server.aiapi.model_readme import ReadmeRules, write_readme
from server.aiapi.model_test_values import Skeleton, apply_skeleton_answers, skeleton_requests
from server.aiapi.operations import Operation


@dataclass(frozen=True)
class ReadmePlan:
    """How the README is asked for and judged; None in a batch where the client keeps the
    README it has."""

    system: str
    task: str
    names: tuple[str, ...]  # the package's and the API's: the README names one
    rules: ReadmeRules
    fallback: str  # the generator's README


@dataclass(frozen=True)
class ClientBatch:
    language: str
    folder: Path
    operations: list[tuple[str, Operation]]  # by the client's names for them
    comment_system: str
    comment_task: Callable[[str, Operation], str]
    apply_comments: Callable[[dict[str, Answer], float], list[PieceOutcome]]
    skeleton: Skeleton | None
    readme: ReadmePlan | None


def write_batch(
    document: ContractDocument,
    batch: ClientBatch,
    options: ModelOptions,
    progress: Callable[[str], None] | None = None,
) -> ModelReport:
    """Ask for every part of the batch at once and keep those that pass their checks."""
    started = time.perf_counter()
    report = ModelReport(batch.language)
    requests = {
        name: request_for(
            chat_prompt(batch.comment_system, batch.comment_task(name, op)), options.max_tokens
        )
        for name, op in batch.operations
    }
    requests.update(skeleton_requests(document, batch.skeleton, options.max_tokens))
    if batch.readme is not None:
        requests["readme"] = request_for(
            chat_prompt(batch.readme.system, batch.readme.task), options.readme_max_tokens
        )
    if progress is not None:
        progress(f"{batch.language}: asking the model for {len(requests)} parts")
    answers, message = ask_all(requests, options)
    if message is not None:
        report.message = message
        if batch.readme is not None:
            (batch.folder / "README.md").write_text(batch.readme.fallback, encoding="utf-8")
        return report
    comments = {name: answers.get(name, Answer(None, "not asked")) for name, _ in batch.operations}
    report.pieces += batch.apply_comments(comments, options.check_timeout_s)
    if batch.skeleton is not None and progress is not None:
        progress(f"{batch.language}: checking the model's test values")
    report.pieces += apply_skeleton_answers(
        document, batch.skeleton, answers, options.check_timeout_s
    )
    if batch.readme is not None:
        readme = batch.readme
        operations = {name for name, _ in batch.operations}
        answer = answers.get("readme", Answer(None, "not asked"))
        report.pieces.append(
            write_readme(batch.folder, answer, operations, readme.names, readme.rules,
                         readme.fallback)
        )  # fmt: skip
    report.seconds = time.perf_counter() - started
    return report
