"""Each language's own static checker over the generated code.

mypy --strict for Python, `tsc --noEmit` (strict) for TypeScript, `go vet` for Go. Their
caches go to a scratch folder, never into the output, so verifying leaves the output's
bytes as they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from server.aiapi.tools import ToolMissing, go_tool, node_tool, tools_folder


@dataclass(frozen=True)
class CheckResult:
    language: str
    checker: str
    ok: bool
    seconds: float
    output: str = ""


def check_python(package: Path, timeout_s: float = 600) -> CheckResult:
    """mypy --strict; its cache is shared between runs so pydantic and httpx are read once."""
    with tempfile.TemporaryDirectory(prefix="headstart-mypy-") as scratch:
        config = Path(scratch) / "mypy.ini"
        config.write_text("[mypy]\n", encoding="utf-8")  # the project's own settings stay out
        command = [
            sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
            "--cache-dir", str(tools_folder() / "aiapi-mypy-cache"), "--config-file", str(config),
            "-p", package.name,
        ]  # fmt: skip
        return _run("python", "mypy --strict", command, package.parent, timeout_s)


def typescript_module_paths() -> dict[str, list[str]]:
    """tsconfig `paths` to the packages a generated client imports (zod, and
    @tanstack/react-query when it has hooks), from .tools/aiapi-node: the output stays
    without a node_modules of its own."""
    modules = tools_folder() / "aiapi-node" / "node_modules"
    return {name: [str(modules / name)] for name in ("zod", "@tanstack/react-query")}


def check_typescript(folder: Path, timeout_s: float = 600) -> CheckResult:
    tsc = node_tool("tsc")
    with tempfile.TemporaryDirectory(prefix="headstart-tsc-") as scratch:
        config = Path(scratch) / "tsconfig.json"
        config.write_text(
            json.dumps(
                {
                    "extends": str((folder / "tsconfig.json").resolve()),
                    "compilerOptions": {"paths": typescript_module_paths(), "types": []},
                    "include": [str((folder / "src").resolve() / "**" / "*.ts")],
                }
            ),
            encoding="utf-8",
        )
        return _run("typescript", "tsc --noEmit", [tsc, "-p", str(config)], folder, timeout_s)


def check_go(folder: Path, timeout_s: float = 600) -> CheckResult:
    go = go_tool("go")
    cache = tools_folder() / "aiapi-go-cache"
    env = {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GO111MODULE": "on",
        "GOCACHE": str(cache / "build"),
        "GOPATH": str(cache / "path"),
    }
    return _run("go", "go vet", [go, "vet", "./..."], folder, timeout_s, env)


def _run(
    language: str,
    checker: str,
    command: list[str],
    cwd: Path,
    timeout_s: float,
    env: dict[str, str] | None = None,
) -> CheckResult:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=env
        )
    except subprocess.TimeoutExpired:
        seconds = time.perf_counter() - started
        return CheckResult(language, checker, False, seconds, f"timed out after {timeout_s} s")
    except FileNotFoundError as exc:
        raise ToolMissing(language, f"{checker}: {exc}") from exc
    seconds = time.perf_counter() - started
    return CheckResult(
        language, checker, done.returncode == 0, seconds, (done.stdout + done.stderr).strip()
    )
