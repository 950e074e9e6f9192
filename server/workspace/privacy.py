"""Documents that must never reach a prompt, whoever opens them in the editor.

The index already leaves out files whose names mark credentials (`.env`, `*.pem`,
`id_rsa`, ...) and whatever `.headstartignore` names. A document the user opens is
decided by the same rules (`cache.scan.check_file`), so that completing or refactoring in
it never sends it to the model either; outside every workspace folder only its name and
its folders' names can tell.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cache.scan import ScanSettings, SkipReason, check_file, is_secret_name

PRIVATE_REASONS = {
    SkipReason.SECRET: "its name marks a file of credentials",
    SkipReason.HEADSTARTIGNORE: ".headstartignore leaves it out",
    SkipReason.EXCLUDED: "the workspace's exclude rules leave it out",
}


def private_reason(path: Path, roots: Iterable[Path]) -> str | None:
    """Why the file at `path` must stay out of prompts, or None."""
    for root in roots:
        if path.is_relative_to(root):
            relative = path.relative_to(root).as_posix()
            checked = check_file(root, relative, ScanSettings(), data=b"")
            return PRIVATE_REASONS.get(checked) if isinstance(checked, SkipReason) else None
    if any(is_secret_name(part) for part in path.parts[-3:]):
        return PRIVATE_REASONS[SkipReason.SECRET]
    return None
