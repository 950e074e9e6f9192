"""What `headstart doctor` found: one line per check, a status, and what to do about it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal

Status = Literal["OK", "WARN", "FAIL", "INFO"]
"""OK: works. WARN: works, but not as well as it could. FAIL: broken, the exit code says so.
INFO: nothing to check here, only what to know (an editor that is not installed)."""


@dataclass(frozen=True)
class Check:
    """One finding: `area` groups it (backend, tokenizer, cache, settings, editors)."""

    area: str
    status: Status
    summary: str
    fix: str = ""
    details: tuple[str, ...] = ()


def exit_code(checks: list[Check]) -> int:
    """1 when anything is broken (a FAIL), else 0."""
    return 1 if any(check.status == "FAIL" for check in checks) else 0


def render_text(checks: list[Check], heading: str) -> str:
    """The report for a person: one line each, the details and the fix indented below."""
    lines = [heading, ""]
    for check in checks:
        lines.append(f"{check.status:<4}  {check.area}: {check.summary}")
        lines.extend(f"        {detail}" for detail in check.details)
        if check.fix:
            lines.append(f"        fix: {check.fix}")
    failed = sum(check.status == "FAIL" for check in checks)
    warned = sum(check.status == "WARN" for check in checks)
    lines.append("")
    if failed:
        lines.append(f"{failed} broken, {warned} to look at: see the fix under each FAIL.")
    elif warned:
        lines.append(f"Nothing broken; {warned} to look at (WARN).")
    else:
        lines.append("Everything checked works.")
    return "\n".join(lines)


def render_json(checks: list[Check]) -> str:
    return json.dumps(
        {"ok": exit_code(checks) == 0, "checks": [asdict(check) for check in checks]}, indent=2
    )
