"""The job service's own settings (`headstart aiapi serve`), from HEADSTART_AIAPI_* variables.

They are the operator's, never a request's: which keys are valid, how much work one key may
queue, how long a job may run and how long its result is kept. docs/aiapi.md lists them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cache.user_dirs import headstart_cache_dir

MIB = 1024 * 1024


def default_data_dir() -> Path:
    """aiapi-service in Headstart's cache folder, beside the project caches."""
    return headstart_cache_dir() / "aiapi-service"


class ServiceSettings(BaseSettings):
    """Every limit of the service; each field is also HEADSTART_AIAPI_<FIELD> (upper case)."""

    model_config = SettingsConfigDict(env_prefix="HEADSTART_AIAPI_", extra="forbid")

    host: str = Field("127.0.0.1", description="Address to listen on.")
    port: int = Field(8080, ge=0, le=65_535, description="Port to listen on.")
    keys_file: Path | None = Field(
        None,
        description="File of API keys, one `USER:sha256:HEX` a line (`headstart aiapi key` "
        "writes them); re-read when it changes.",
    )
    keys: str = Field(
        "",
        description="More keys in the same form, separated by commas or newlines (for "
        "containers that take secrets as variables).",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Where jobs keep their documents, outputs and zips (its `jobs/` folder is "
        "emptied at start and stop: jobs do not outlive the process).",
    )
    workers: int = Field(
        default_factory=lambda: os.cpu_count() or 1,
        ge=1,
        le=256,
        description="Jobs running at once, over all keys (default: the CPU count).",
    )
    max_running_per_key: int = Field(2, ge=1, le=64, description="Jobs one key runs at once.")
    max_queued_per_key: int = Field(
        8, ge=0, le=1_000, description="Jobs one key may have waiting beyond those; then 429."
    )
    job_timeout_s: float = Field(
        600.0,
        gt=0,
        le=86_400,
        description="Longest a job may run (generation and checks); then its processes are "
        "stopped and it fails with 'timed out'.",
    )
    kill_grace_s: float = Field(
        5.0,
        ge=0,
        le=600,
        description="After SIGTERM, how long a timed-out worker has to stop its tools before "
        "SIGKILL ends its process group.",
    )
    result_ttl_s: float = Field(
        3_600.0,
        gt=0,
        le=30 * 86_400,
        description="How long a finished job, its status and its zip are kept.",
    )
    max_body_bytes: int = Field(
        32 * MIB, ge=1_024, le=1_024 * MIB, description="Largest request body; then 413."
    )
    model_settings: str = Field(
        "{}",
        description="For jobs asked `with_model`: Headstart settings as JSON, as `headstart "
        "aiapi generate --settings` takes them, for the model that writes the docstrings and "
        "comments (`backend.url`, `backend.model`, `backend.apiKeyEnv`; the HEADSTART_* "
        "variables still win). The operator's alone: a request cannot name a model.",
    )

    @field_validator("model_settings")
    @classmethod
    def _valid_model_settings(cls, value: str) -> str:
        """Checked at start, so a bad value stops the service, not each job."""
        from server.config import SettingsError, load_settings

        try:
            layer = json.loads(value) if value.strip() else {}
            load_settings(layer)
        except (ValueError, SettingsError) as exc:
            raise ValueError(f"not Headstart settings as JSON: {exc}") from None
        return value
