"""The job service's jobs: admission per key, worker processes, timeouts, expiry.

Each key may run `max_running_per_key` jobs and keep `max_queued_per_key` more waiting;
beyond that a submission is refused (the HTTP layer answers 429). At most `workers` jobs
run at once over all keys, first come first served. A job runs as a worker process
(server.aiapi.job_worker) in a process group of its own, so a timeout ends the worker and
every tool it started. Jobs live in memory, their files under data_dir/jobs/<id>/, and both
go `result_ttl_s` after the job finished. Nothing here knows HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import math
import os
import re
import shutil
import signal
import sys
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from server.aiapi.job_report import JobReport
from server.aiapi.job_worker import JobRequest
from server.aiapi.service_settings import ServiceSettings

log = logging.getLogger(__name__)

_JOB_FOLDER = re.compile(r"^[0-9a-f]{32}$")
WORKER_COMMAND = (sys.executable, "-m", "server.aiapi.job_worker")


class JobStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    completed = "completed"
    failed = "failed"


class QueueFull(Exception):
    """The key has as many jobs running and waiting as it may; try again after a while."""

    def __init__(self, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(f"this key's queue is full: retry after {retry_after_s} s")


@dataclass
class Job:
    id: str
    owner: str
    key_id: str
    folder: Path
    request: JobRequest
    created_at: float = field(default_factory=time.time)
    status: JobStatus = JobStatus.queued
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    report: JobReport | None = None

    @property
    def result_zip(self) -> Path | None:
        archive = self.folder / "result.zip"
        has = self.report is not None and self.report.has_result
        return archive if has and archive.exists() else None

    def progress(self, limit: int = 50) -> list[str]:
        with contextlib.suppress(OSError):
            lines = (self.folder / "progress.log").read_text(encoding="utf-8").splitlines()
            return lines[-limit:]
        return []


class JobQueue:
    """Admits, runs and forgets jobs; start() and stop() bracket its life."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self.root = settings.data_dir / "jobs"
        self.jobs: dict[str, Job] = {}
        self._running_anywhere = asyncio.Semaphore(settings.workers)
        self._running_per_key: dict[str, asyncio.Semaphore] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._workers: dict[str, asyncio.subprocess.Process] = {}
        self._durations: deque[float] = deque(maxlen=20)
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        for old in self.root.iterdir():  # jobs of an earlier process: nobody can ask for them
            if old.is_dir() and _JOB_FOLDER.match(old.name):
                await asyncio.to_thread(shutil.rmtree, old, True)
        self._sweeper = asyncio.create_task(self._sweep_forever())

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for job in list(self.jobs.values()):  # nobody can ask for them after this process
            await asyncio.to_thread(shutil.rmtree, job.folder, True)
        self.jobs.clear()

    def active_for_key(self, key_id: str) -> int:
        return sum(
            1
            for job in self.jobs.values()
            if job.key_id == key_id and job.status in (JobStatus.queued, JobStatus.running)
        )

    def retry_after_s(self) -> int:
        """The mean time of the last jobs: about when a place frees up (1 s at least)."""
        if not self._durations:
            return 5
        return max(1, math.ceil(sum(self._durations) / len(self._durations)))

    async def submit(
        self,
        owner: str,
        key_id: str,
        document: bytes,
        document_name: str,
        languages: list[str],
        kinds: list[str],
        verify: bool,
        with_model: bool = False,
        *,
        react_query: bool = False,
    ) -> Job:
        limit = self.settings.max_running_per_key + self.settings.max_queued_per_key
        if self.active_for_key(key_id) >= limit:
            raise QueueFull(self.retry_after_s())
        job_id = uuid.uuid4().hex
        request = JobRequest(
            document=document_name,
            languages=languages,
            kinds=kinds,
            verify=verify,
            with_model=with_model,
            model_settings=self.settings.model_settings if with_model else "{}",
            react_query=react_query,
            timeout_s=self.settings.job_timeout_s,
        )
        job = Job(job_id, owner, key_id, self.root / job_id, request)
        self.jobs[job_id] = job  # counted before the first await: admission stays exact
        await asyncio.to_thread(self._write_job_files, job, document)
        task = asyncio.create_task(self._run(job), name=f"aiapi-job-{job_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        log.info("job %s queued for %s (key %s)", job_id, owner, key_id)
        return job

    def get(self, owner: str, job_id: str) -> Job | None:
        """The job if it exists and is this user's: others' jobs do not exist for them."""
        job = self.jobs.get(job_id)
        return job if job is not None and job.owner == owner else None

    def expires_at(self, job: Job) -> float | None:
        return None if job.finished_at is None else job.finished_at + self.settings.result_ttl_s

    @staticmethod
    def _write_job_files(job: Job, document: bytes) -> None:
        job.folder.mkdir(mode=0o700)
        (job.folder / job.request.document).write_bytes(document)
        (job.folder / "job.json").write_text(job.request.model_dump_json(), encoding="utf-8")

    def _key_slots(self, key_id: str) -> asyncio.Semaphore:
        slots = self._running_per_key.get(key_id)
        if slots is None:
            slots = asyncio.Semaphore(self.settings.max_running_per_key)
            self._running_per_key[key_id] = slots
        return slots

    async def _run(self, job: Job) -> None:
        try:
            async with self._key_slots(job.key_id), self._running_anywhere:
                job.status, job.started_at = JobStatus.running, time.time()
                log.info("job %s running", job.id)
                await self._run_worker(job)
        except asyncio.CancelledError:
            self._finish(job, JobStatus.failed, "the service stopped before the job finished")
            raise
        except Exception as exc:
            log.exception("job %s", job.id)
            self._finish(job, JobStatus.failed, f"internal error: {type(exc).__name__}: {exc}")

    async def _run_worker(self, job: Job) -> None:
        timeout = self.settings.job_timeout_s
        with (job.folder / "worker.log").open("wb") as output:
            worker = await asyncio.create_subprocess_exec(
                *WORKER_COMMAND,
                str(job.folder),
                cwd=job.folder,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
        self._workers[job.id] = worker
        try:
            await asyncio.wait_for(worker.wait(), timeout)
        except TimeoutError:
            await self._end_worker(worker)
            self._finish(job, JobStatus.failed, f"timed out after {timeout:g} s")
            return
        finally:
            if worker.returncode is None:  # cancelled: the service is stopping
                await asyncio.shield(self._end_worker(worker))
            _kill_group(worker.pid, signal.SIGKILL)  # anything the worker left behind
            self._workers.pop(job.id, None)
        self._read_report(job, worker.returncode)

    async def _end_worker(self, worker: asyncio.subprocess.Process) -> None:
        """SIGTERM to the worker (it stops its tools), then SIGKILL to its whole group."""
        with contextlib.suppress(ProcessLookupError):
            worker.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(worker.wait(), self.settings.kill_grace_s)
        _kill_group(worker.pid, signal.SIGKILL)
        await worker.wait()

    def _read_report(self, job: Job, returncode: int | None) -> None:
        try:
            report = JobReport.model_validate_json(
                (job.folder / "report.json").read_text(encoding="utf-8")
            )
        except (OSError, ValidationError):
            tail = ""
            with contextlib.suppress(OSError):
                tail = (job.folder / "worker.log").read_text(errors="replace")[-2000:]
            self._finish(
                job, JobStatus.failed, f"the worker ended ({returncode}) without a report\n{tail}"
            )
            return
        job.report = report
        self._finish(job, JobStatus.completed if report.ok else JobStatus.failed, report.error)

    def _finish(self, job: Job, status: JobStatus, error: str | None) -> None:
        if job.finished_at is not None:
            return
        job.status, job.error, job.finished_at = status, error, time.time()
        if job.started_at is not None:
            self._durations.append(job.finished_at - job.started_at)
        log.info("job %s %s%s", job.id, status.value, f": {error}" if error else "")

    async def _sweep_forever(self) -> None:
        interval = max(0.1, min(self.settings.result_ttl_s / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            await self.sweep()

    async def sweep(self) -> None:
        """Forget finished jobs older than the TTL and remove their files."""
        now = time.time()
        expired = [
            job
            for job in self.jobs.values()
            if job.finished_at is not None and job.finished_at + self.settings.result_ttl_s <= now
        ]
        for job in expired:
            del self.jobs[job.id]
            await asyncio.to_thread(shutil.rmtree, job.folder, True)
            log.info("job %s expired", job.id)


def _kill_group(pid: int, signum: int) -> None:
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)
