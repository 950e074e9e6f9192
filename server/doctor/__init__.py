"""`headstart doctor`: checks what Headstart needs, one line each, and says what to fix.

The settings in effect and where each came from; the backend (does it answer, which
engine and model, a tiny completion's round trip); the tokenizer the server would use;
the project cache folder; each editor's setup that can be seen from here. The exit code is
1 when something is broken (a FAIL), so scripts and CI can use it.
"""

from __future__ import annotations

import asyncio
import platform
import sys
from collections.abc import Mapping
from typing import Any

from server import __version__
from server.doctor.backend import backend_checks
from server.doctor.cache_folder import cache_checks
from server.doctor.editors import editor_checks
from server.doctor.report import Check, exit_code, render_json, render_text
from server.doctor.settings_sources import load_with_sources


def run_checks(options: Mapping[str, Any]) -> list[Check]:
    settings, checks = load_with_sources(options)
    if settings is None:
        return checks  # nothing else can be checked with settings that do not validate
    checks += asyncio.run(backend_checks(settings))
    checks += cache_checks(settings)
    checks += editor_checks()
    return checks


def main(options: Mapping[str, Any], *, as_json: bool = False) -> int:
    """Print the report (text, or JSON with --json); 1 when something is broken."""
    checks = run_checks(options)
    if as_json:
        print(render_json(checks))
    else:
        heading = (
            f"headstart doctor: headstart {__version__}, Python {platform.python_version()} "
            f"({sys.executable})"
        )
        print(render_text(checks, heading))
    return exit_code(checks)
