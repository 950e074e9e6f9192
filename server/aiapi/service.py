"""`headstart aiapi serve`: the job service over HTTP (FastAPI), described at /openapi.json.

POST /v1/generate takes an OpenAPI document and answers 202 with a job id; GET
/v1/jobs/{id} says queued, running, completed or failed (with the document's problems at
their lines, or the checkers' output); GET /v1/jobs/{id}/result is the zip. Every /v1 call
needs `Authorization: Bearer KEY`; a user sees only their own jobs. The work and its limits
are server.aiapi.jobs'; this module is the HTTP face: keys, body size, options, statuses.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response, Security
from fastapi.responses import FileResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.datastructures import UploadFile

from server import __version__
from server.aiapi import pipeline
from server.aiapi.api_keys import KeyEntry, KeyRing
from server.aiapi.job_report import LanguageOutcome, ModelPartsOutcome, Problem
from server.aiapi.jobs import Job, JobQueue, JobStatus, QueueFull
from server.aiapi.service_settings import ServiceSettings

LANGUAGES: tuple[str, ...] = pipeline.LANGUAGES
KINDS: tuple[str, ...] = tuple(getattr(pipeline, "KINDS", ("client",)))
LANGUAGE_LIST = ",".join(LANGUAGES)
DEFAULT_KINDS = ("client",)
RESERVED_NAMES = {"job.json", "report.json", "report.partial"}

DESCRIPTION = """\
Typed clients (Python, TypeScript, Go) from an OpenAPI 3.x document, as jobs.

1. `POST /v1/generate` with the document (YAML or JSON) as the body, or as the `document`
   part of a multipart form: `202` and a job id.
2. `GET /v1/jobs/{job_id}` until its status is `completed` or `failed`.
3. `GET /v1/jobs/{job_id}/result`: a zip of the code, a README and `verify.py`, which
   repeats the checks on your machine.

Every call needs `Authorization: Bearer <key>`.
"""

GENERATE_BODY: dict[str, Any] = {
    "required": True,
    "description": "The OpenAPI 3.x document: YAML or JSON text, or a multipart form whose "
    "`document` part is the file (its other parts may carry the query's options).",
    "content": {
        "application/yaml": {"schema": {"type": "string"}},
        "application/json": {"schema": {"type": "object", "additionalProperties": True}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["document"],
                "properties": {
                    "document": {"type": "string", "format": "binary"},
                    "languages": {"type": "string"},
                    "kinds": {"type": "string"},
                    "verify": {"type": "boolean"},
                    "with_model": {"type": "boolean"},
                    "react_query": {"type": "boolean"},
                },
            }
        },
    },
}


class ErrorDetail(BaseModel):
    detail: str


class JobCreated(BaseModel):
    job_id: str
    status: JobStatus
    status_url: str = Field(description="Where to ask for the job's status")


class JobView(BaseModel):
    """A job as its owner sees it."""

    job_id: str
    status: JobStatus
    languages: list[str]
    kinds: list[str]
    verify: bool
    with_model: bool = Field(
        False, description="Whether the model wrote doc comments, test values and READMEs"
    )
    react_query: bool = Field(description="Whether the TypeScript client has React Query options")
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    expires_at: datetime | None = Field(None, description="When the job and its zip go")
    error: str | None = Field(None, description="Why the job failed, in a line or a few")
    problems: list[Problem] = Field(
        default_factory=list, description="An invalid document's problems, at their lines"
    )
    results: list[LanguageOutcome] = Field(
        default_factory=list, description="Per language: generation, checker, contract tests"
    )
    model_parts: list[ModelPartsOutcome] = Field(
        default_factory=list,
        description="With with_model, per language: the pieces the model wrote that went in, "
        "and those that kept the generator's text",
    )
    progress: list[str] = Field(default_factory=list, description="The worker's last lines")
    result_url: str | None = Field(None, description="The zip, once there is one")


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorDetail, "description": "No key, or not a valid one"},
    404: {"model": ErrorDetail, "description": "No such job for this user (or it expired)"},
}


def _timestamp(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _split(
    values: list[str], allowed: tuple[str, ...], default: tuple[str, ...], what: str
) -> list[str]:
    """Repeated and/or comma-separated values, checked, in order, without repeats."""
    chosen: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part and part not in chosen:
                chosen.append(part)
    unknown = [v for v in chosen if v not in allowed]
    if unknown:
        raise HTTPException(
            422, f"unknown {what} {', '.join(unknown)}; choose from {','.join(allowed)}"
        )
    return chosen or list(default)


def _document_name(filename: str | None, body: bytes, content_type: str) -> str:
    """A safe file name for the document (messages and generated headers name it)."""
    suffix = ".json" if "json" in content_type or body.lstrip()[:1] == b"{" else ".yaml"
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80].lstrip(".")
    if not name:
        return "openapi" + suffix
    if not name.lower().endswith((".yaml", ".yml", ".json")):
        name += suffix
    return "document-" + name if name in RESERVED_NAMES else name


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to be over the limit."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"the body is over the limit of {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(413, f"the body is over the limit of {limit} bytes")
    return bytes(body)


async def _form_of(request: Request, body: bytes) -> dict[str, Any]:
    """The multipart form of a body already read (and measured)."""

    async def replay() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, replay).form(max_files=1, max_fields=10)
    return dict(form.multi_items())


BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="apiKey",
    description="A key from the service's keys file (`headstart aiapi key`)",
)
router = APIRouter(prefix="/v1")


def _jobs(request: Request) -> JobQueue:
    queue: JobQueue = request.app.state.jobs
    return queue


def _caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
) -> KeyEntry:
    keys: KeyRing = request.app.state.keys
    entry = keys.user_of(credentials.credentials) if credentials is not None else None
    if entry is None:
        raise HTTPException(
            401, "a valid API key is needed", headers={"WWW-Authenticate": "Bearer"}
        )
    return entry


Caller = Annotated[KeyEntry, Depends(_caller)]


def _owned_job(request: Request, job_id: str, who: Caller) -> Job:
    job = _jobs(request).get(who.user, job_id)
    if job is None:
        raise HTTPException(404, "no such job (it may have expired)")
    return job


OwnedJob = Annotated[Job, Depends(_owned_job)]


@router.post(
    "/generate",
    status_code=202,
    operation_id="generate",
    summary="Start a job that generates code from an OpenAPI document",
    responses={
        **ERRORS,
        400: {"model": ErrorDetail, "description": "No document in the request"},
        413: {"model": ErrorDetail, "description": "The body is over the size limit"},
        422: {
            "model": ErrorDetail,
            "description": "An unknown language or kind, or react_query without typescript",
        },
        429: {"model": ErrorDetail, "description": "This key's queue is full: see Retry-After"},
    },
    openapi_extra={"requestBody": GENERATE_BODY},
)
async def generate(
    request: Request,
    response: Response,
    who: Caller,
    languages: Annotated[
        list[str],
        Query(
            default_factory=list,
            description=f"Some of {LANGUAGE_LIST}, repeated or comma-separated (default: all)",
        ),
    ],
    kinds: Annotated[
        list[str],
        Query(
            default_factory=list,
            description=f"What to generate: some of {','.join(KINDS)} (default: client)",
        ),
    ],
    verify: Annotated[
        bool, Query(description="Also run each language's checker and the contract tests")
    ] = False,
    with_model: Annotated[
        bool,
        Query(
            description="Let the service's model write doc comments, the test skeletons' "
            "example values and the READMEs; each piece goes in only when the checks pass "
            "with it (the model is the service's own: a request cannot name one)"
        ),
    ] = False,
    react_query: Annotated[
        bool,
        Query(
            description="Also write TanStack React Query options for each operation into the "
            "TypeScript client (openapi-ts's @tanstack/react-query plugin); needs typescript "
            "among the languages"
        ),
    ] = False,
) -> JobCreated:
    settings: ServiceSettings = request.app.state.settings
    body = await _read_body(request, settings.max_body_bytes)
    content_type = request.headers.get("content-type", "").lower()
    filename: str | None = None
    if content_type.startswith("multipart/form-data"):
        form = await _form_of(request, body)
        upload = form.get("document")
        if not isinstance(upload, UploadFile):
            raise HTTPException(400, "the form has no `document` file part")
        filename, body = upload.filename, await upload.read()
        languages = [form["languages"]] if isinstance(form.get("languages"), str) else languages
        kinds = [form["kinds"]] if isinstance(form.get("kinds"), str) else kinds
        if isinstance(form.get("verify"), str):
            verify = form["verify"].strip().lower() in ("1", "true", "yes", "on")
        if isinstance(form.get("with_model"), str):
            with_model = form["with_model"].strip().lower() in ("1", "true", "yes", "on")
        if isinstance(form.get("react_query"), str):
            react_query = form["react_query"].strip().lower() in ("1", "true", "yes", "on")
    if not body.strip():
        raise HTTPException(400, "no document: send it as the body or as a `document` part")
    chosen = _split(languages, LANGUAGES, LANGUAGES, "language")
    if react_query and "typescript" not in chosen:
        raise HTTPException(
            422, "react_query adds hooks to the TypeScript client: add typescript to languages"
        )
    try:
        job = await _jobs(request).submit(
            who.user,
            who.key_id,
            body,
            _document_name(filename, body, content_type),
            chosen,
            _split(kinds, KINDS, DEFAULT_KINDS, "kind"),
            verify,
            with_model=with_model,
            react_query=react_query,
        )
    except QueueFull as exc:
        headers = {"Retry-After": str(exc.retry_after_s)}
        raise HTTPException(429, str(exc), headers=headers) from exc
    status_url = request.url_for("get_job", job_id=job.id).path
    response.headers["Location"] = status_url
    return JobCreated(job_id=job.id, status=job.status, status_url=status_url)


@router.get(
    "/jobs/{job_id}",
    operation_id="get_job",
    name="get_job",
    summary="A job's status, and why it failed",
    responses=ERRORS,
)
async def get_job(request: Request, job: OwnedJob) -> JobView:
    report = job.report
    result_url = None
    if job.result_zip is not None:
        result_url = request.url_for("get_result", job_id=job.id).path
    return JobView(
        job_id=job.id,
        status=job.status,
        languages=job.request.languages,
        kinds=job.request.kinds,
        verify=job.request.verify,
        with_model=job.request.with_model,
        react_query=job.request.react_query,
        created_at=datetime.fromtimestamp(job.created_at, UTC),
        started_at=_timestamp(job.started_at),
        finished_at=_timestamp(job.finished_at),
        expires_at=_timestamp(_jobs(request).expires_at(job)),
        error=job.error,
        problems=report.problems if report else [],
        results=report.languages if report else [],
        model_parts=report.model_parts if report else [],
        progress=job.progress(),
        result_url=result_url,
    )


@router.get(
    "/jobs/{job_id}/result",
    operation_id="get_result",
    name="get_result",
    summary="The job's zip: the code, README.md and verify.py",
    response_class=Response,
    responses={
        200: {
            "description": "The zip",
            "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
        },
        **ERRORS,
        409: {"model": ErrorDetail, "description": "The job has not finished yet"},
    },
)
async def get_result(job: OwnedJob) -> Response:
    if job.finished_at is None:
        raise HTTPException(409, f"the job is {job.status.value}: ask again when it finished")
    archive = job.result_zip
    if archive is None:
        raise HTTPException(404, f"the job failed before it wrote code: {job.error}")
    return FileResponse(archive, media_type="application/zip", filename=f"{job.id}.zip")


def create_app(settings: ServiceSettings, keys: KeyRing) -> FastAPI:
    """The service: its routes, its keys, and a job queue that lives as long as the app."""
    queue = JobQueue(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await queue.start()
        try:
            yield
        finally:
            await queue.stop()

    app = FastAPI(
        title="Headstart API contracts",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings, app.state.keys, app.state.jobs = settings, keys, queue
    app.include_router(router)
    return app
