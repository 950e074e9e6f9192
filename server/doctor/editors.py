"""The doctor's look at each editor's setup it can see from here: whether editors can start
`headstart serve`, the VS Code extension, a Neovim configuration, and how to check
JetBrains (LSP4IJ keeps its server definitions in the IDE's own settings)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from server.doctor.report import Check

EXTENSION_ID = "headstart.headstart"
"""publisher.name of clients/vscode/package.json."""
MOST_FILES = 2_000
"""Configuration files read at most in one editor's folder (a plugin manager's tree is big)."""


def editor_checks() -> list[Check]:
    return [_server_command(), _vscode(), _neovim(), _jetbrains()]


def _server_command() -> Check:
    found = shutil.which("headstart")
    if found:
        return Check("editors", "OK", f"editors can start `headstart serve`: {found}")
    python = sys.executable
    return Check(
        "editors",
        "WARN",
        "`headstart` is not on PATH: an editor that runs `headstart serve` cannot start it",
        fix=f"put {Path(python).parent} on PATH, or set VS Code's headstart.server.pythonPath "
        f"to {python} (Neovim: cmd = {{ '{python}', '-m', 'server', 'serve' }})",
    )


def _vscode_extension_dirs() -> list[Path]:
    home = Path.home()
    configured = os.environ.get("VSCODE_EXTENSIONS")
    folders = [Path(configured)] if configured else []
    folders += [
        home / ".vscode" / "extensions",
        home / ".vscode-insiders" / "extensions",
        home / ".vscode-server" / "extensions",
        home / ".vscode-oss" / "extensions",
        home / ".local" / "share" / "code-server" / "extensions",
    ]
    return folders


def _vscode() -> Check:
    folders = _vscode_extension_dirs()
    for folder in folders:
        try:
            installed = sorted(folder.glob(f"{EXTENSION_ID}-*"))
        except OSError:
            continue
        for extension in installed:
            version = _manifest_version(extension / "package.json")
            if version is not None:
                return Check("editors", "OK", f"VS Code: extension {version} at {extension}")
    return Check(
        "editors",
        "INFO",
        "VS Code: the Headstart extension is not installed (looked in "
        f"{', '.join(str(f) for f in folders if f.is_dir()) or '~/.vscode/extensions'})",
        fix="`make vscode`, then `code --install-extension clients/vscode/headstart.vsix`",
    )


def _manifest_version(path: Path) -> str | None:
    try:
        version = json.loads(path.read_text()).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return str(version) if version else None


def _neovim() -> Check:
    folder = _neovim_config_dir()
    mentions = next(_files_mentioning(folder, ("*.lua", "*.vim"), "headstart"), None)
    nvim = shutil.which("nvim")
    version = _nvim_version(nvim) if nvim else None
    ghost = ""
    if version is not None:
        ghost = f" (Neovim {version[0]}.{version[1]}: " + (
            "ghost text)" if version >= (0, 12) else "suggestions in the completion menu)"
        )
    if mentions is not None:
        return Check("editors", "OK", f"Neovim: {mentions} sets up headstart{ghost}")
    if nvim is None:
        return Check("editors", "INFO", f"Neovim: not found (no nvim on PATH, nothing in {folder})")
    return Check(
        "editors",
        "INFO",
        f"Neovim: {nvim}{ghost}, but nothing in {folder} mentions headstart",
        fix="load clients/neovim/headstart.lua from init.lua: "
        "dofile('/path/to/headstart/clients/neovim/headstart.lua')",
    )


def _neovim_config_dir() -> Path:
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "nvim"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "nvim"


def _nvim_version(nvim: str) -> tuple[int, int] | None:
    try:
        shown = subprocess.run(
            [nvim, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"NVIM v(\d+)\.(\d+)", shown)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _jetbrains() -> Check:
    how = (
        "with LSP4IJ and clients/jetbrains/template imported, Settings → Languages & "
        "Frameworks → Language Servers lists Headstart, and its Language Servers tool "
        "window shows the server's log (docs/editors.md, JetBrains)"
    )
    found = [
        config
        for folder in _jetbrains_dirs()
        for config in _files_mentioning(folder, ("*.xml",), "headstart serve")
    ]
    if found:
        return Check(
            "editors",
            "INFO",
            f"JetBrains: {found[0]} names `headstart serve` (an LSP4IJ server definition)",
            fix=f"to check it runs: {how}",
        )
    return Check("editors", "INFO", "JetBrains: cannot be checked from here", fix=how)


def _jetbrains_dirs() -> list[Path]:
    home = Path.home()
    return [
        home / ".config" / "JetBrains",
        home / "Library" / "Application Support" / "JetBrains",
        Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "JetBrains",
    ]


def _files_mentioning(folder: Path, patterns: tuple[str, ...], text: str) -> Iterator[Path]:
    """Files under `folder` matching a pattern whose first 1 MB holds `text`."""
    if not folder.is_dir():
        return
    seen = 0
    for parent, _, names in os.walk(folder):
        for name in names:
            if not any(Path(name).match(pattern) for pattern in patterns):
                continue
            seen += 1
            if seen > MOST_FILES:
                return
            path = Path(parent) / name
            try:
                with path.open("rb") as handle:
                    head = handle.read(1 << 20)
            except OSError:
                continue
            if text.encode() in head:
                yield path
