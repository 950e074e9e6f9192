#!/usr/bin/env python3
"""Check the generated code here with each language's own checker: python3 verify.py [LANG...]

Copied as verify.py into every zip of `headstart aiapi serve`, so the user can repeat the
checks the service ran on their own machine: `mypy --strict` for Python, `tsc --noEmit`
for TypeScript, `go vet` for Go. Standard library only. Exit status: 0 every check passed,
1 a check failed, 2 a tool is missing (the message says what to install).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TYPESCRIPT = "typescript@5.9.3"
PASSED, FAILED, MISSING = 0, 1, 2


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> int:
    print("  $ " + " ".join(command), flush=True)
    return subprocess.run(command, cwd=cwd, env=env).returncode


def check_python(folder: Path) -> int:
    try:
        import mypy  # noqa: F401
    except ImportError:
        print(
            "  missing: mypy (and the client's pydantic>=2, httpx): pip install mypy pydantic httpx"
        )
        return MISSING
    packages = sorted(p.name for p in folder.iterdir() if (p / "__init__.py").exists())
    verdict = PASSED
    for package in packages:
        checked = run([sys.executable, "-m", "mypy", "--strict", "-p", package], folder) == 0
        if not checked or run([sys.executable, "-c", f"import {package}"], folder) != 0:
            verdict = FAILED
    return verdict


def check_typescript(folder: Path) -> int:
    npm, npx = shutil.which("npm"), shutil.which("npx")
    if npm is None or npx is None:
        print("  missing: Node.js 20 or newer with npm")
        return MISSING
    install = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"]
    if not (folder / "node_modules").exists() and run(install, folder) != 0:
        return FAILED
    command = [npx, "--yes", "--package", TYPESCRIPT, "tsc", "--noEmit", "-p", "."]
    return PASSED if run(command, folder) == 0 else FAILED


def check_go(folder: Path) -> int:
    go = shutil.which("go")
    if go is None:
        print("  missing: Go 1.19 or newer (https://go.dev/dl/)")
        return MISSING
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    return PASSED if run([go, "vet", "./..."], folder, env) == 0 else FAILED


CHECKS = {"python": check_python, "typescript": check_typescript, "go": check_go}


def main(argv: list[str]) -> int:
    asked = argv or [name for name in CHECKS if (HERE / name).is_dir()]
    unknown = [name for name in asked if name not in CHECKS or not (HERE / name).is_dir()]
    if unknown:
        print(f"verify.py: no {', '.join(unknown)} here; choose from: "
              + " ".join(n for n in CHECKS if (HERE / n).is_dir()))  # fmt: skip
        return MISSING
    verdicts = {}
    for name in asked:
        print(f"{name}:", flush=True)
        verdicts[name] = CHECKS[name](HERE / name)
    for name, verdict in verdicts.items():
        print(f"{name}: {('passed', 'FAILED', 'not checked (tool missing)')[verdict]}")
    return max(verdicts.values(), default=PASSED)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
