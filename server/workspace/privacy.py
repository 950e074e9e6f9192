"""Documents that must never reach a prompt, whoever opens them in the editor.

The index already leaves out files whose names mark credentials (`.env`, `*.pem`,
`id_rsa`, ...) and whatever `.headstartignore` names. A document the user opens is
decided by the same rules (`cache.scan.check_file`), so that completing or refactoring in
it never sends it to the model either; outside every workspace folder only its name and
its folders' names can tell. A file that is credentials by its content (a service
account's JSON, a Kubernetes `Secret`, settings with keys: `cache.secrets`) is private
too, judged from its contents on disk when the editor opens it (inside a workspace folder:
nothing outside them is read).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cache.scan import ScanSettings, SkipReason, check_file, is_secret_name
from cache.secrets import secret_file_reason

CONTENT_PROBE_BYTES = 1 << 20
"""Files larger than this are not read to tell whether they are credentials."""

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
            if isinstance(checked, SkipReason):
                return PRIVATE_REASONS.get(checked)
            return _content_reason(path)
    if any(is_secret_name(part) for part in path.parts[-3:]):
        return PRIVATE_REASONS[SkipReason.SECRET]
    return None  # nothing outside the workspace folders is read


def _content_reason(path: Path) -> str | None:
    try:
        with open(path, "rb") as file:
            data = file.read(CONTENT_PROBE_BYTES + 1)
    except OSError:
        return None
    if len(data) > CONTENT_PROBE_BYTES:
        return None
    reason = secret_file_reason(data.decode("utf-8", "replace"), path.as_posix())
    return f"its content is credentials ({reason})" if reason else None
