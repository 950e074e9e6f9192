"""Where the external generators and checkers live, and how their failures are reported."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = ROOT / "server" / "aiapi" / "install_tools.sh"


class GeneratorError(Exception):
    """A generator or formatter failed on a valid document: which language, and its words."""

    def __init__(self, language: str, message: str, output: str = "") -> None:
        self.language = language
        self.output = output.strip()
        detail = f"\n{_tail(self.output)}" if self.output else ""
        super().__init__(f"{language}: {message}{detail}")


class ToolMissing(GeneratorError):
    """A tool is not installed; the message says how to install it."""


def tools_folder() -> Path:
    return Path(os.environ.get("HEADSTART_TOOLS") or ROOT / ".tools")


def node_tool(name: str) -> str:
    """A command from .tools/aiapi-node (openapi-ts, prettier, tsc)."""
    path = tools_folder() / "aiapi-node" / "node_modules" / ".bin" / name
    if not path.exists():
        raise ToolMissing("typescript", f"{name} is not installed: run bash {INSTALL_SCRIPT}")
    if shutil.which("node") is None:
        raise ToolMissing("typescript", "node is not on PATH (Node 20 or newer)")
    return str(path)


def go_tool(name: str) -> str:
    """gofmt or go, from Debian's golang-go or any Go on PATH."""
    found = shutil.which(name)
    if found is None:
        raise ToolMissing("go", f"{name} is not on PATH: run bash {INSTALL_SCRIPT}")
    return found


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:])
