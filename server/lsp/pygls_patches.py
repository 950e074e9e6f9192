"""The parts of pygls that Headstart patches, checked when the server starts.

`server.lsp.stdio`, `server.lsp.protocol`, `server.lsp.documents` and
`server.lsp.internals` override or read private attributes of pygls (docs/architecture.md,
"pygls patches", says what each patch does, why, and what upstream change would let it
go). They are tested on the pygls versions of `TESTED_PYGLS`, the pin in pyproject.toml. A
pygls outside it, or one where a patched attribute is gone or an overridden method takes
other parameters, stops the server at start with one message naming each problem, rather
than failing mid-session with an AttributeError.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import pygls.io_
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCProtocol
from pygls.workspace import TextDocument, Workspace

TESTED_PYGLS = ">=2.1.0,<2.2"
"""The pygls versions the patches are tested on; pyproject.toml pins the same range."""
_TESTED_FROM, _TESTED_BELOW = (2, 1, 0), (2, 2)
"""`TESTED_PYGLS` as release tuples (tests/test_pygls_patches.py checks they agree)."""


@dataclass(frozen=True, slots=True)
class Patched:
    """One private part of pygls that a module of ours relies on."""

    owner: str
    """"server", "protocol", "workspace", "document" (a probe of that kind) or a class or
    module named by its dotted path."""
    name: str
    used_by: str
    parameters: tuple[str, ...] | None = None
    """For a method we override: its parameter names, which our override mirrors."""


PATCHED: tuple[Patched, ...] = (
    Patched("server", "_stop_event", "server/lsp/stdio.py: shutdown() stops our reader"),
    Patched("server", "_server", "server/lsp/stdio.py: shutdown() closes our TCP listener"),
    Patched("pygls.io_", "StdoutWriter", "server/lsp/stdio.py: the writer for stdout"),
    Patched(
        "protocol",
        "_request_futures",
        "server/lsp/protocol.py and internals.py: futures of pending messages",
    ),
    Patched("protocol", "_workspace", "server/lsp/protocol.py: lsp_initialize's LspWorkspace"),
    Patched(
        "pygls.protocol.JsonRPCProtocol",
        "_send_handler_result",
        "server/lsp/protocol.py: a failed request's reply and log line",
        ("self", "future", "msg_id"),
    ),
    Patched(
        "pygls.protocol.JsonRPCProtocol",
        "_handle_cancel_notification",
        "server/lsp/protocol.py: a cancel of an answered request",
        ("self", "msg_id"),
    ),
    Patched(
        "pygls.protocol.JsonRPCProtocol",
        "_execute_handler",
        "server/lsp/protocol.py: notification futures forgotten once done",
        ("self", "msg_id", "handler", "callback", "args", "kwargs"),
    ),
    Patched(
        "pygls.protocol.JsonRPCProtocol",
        "_send_response",
        "server/lsp/protocol.py: error replies",
    ),
    Patched(
        "pygls.protocol.LanguageServerProtocol",
        "lsp_initialize",
        "server/lsp/protocol.py: the workspace replaced during initialize",
        ("self", "params"),
    ),
    Patched("workspace", "_sync_kind", "server/lsp/documents.py: LspWorkspace.like"),
    Patched(
        "pygls.workspace.Workspace",
        "_create_text_document",
        "server/lsp/documents.py: documents of class LspTextDocument",
        ("self", "doc_uri", "source", "version", "language_id"),
    ),
    Patched("document", "_source", "server/lsp/documents.py: an edit spliced into the text"),
    Patched(
        "document",
        "_is_sync_kind_incremental",
        "server/lsp/documents.py: which edits LspTextDocument applies itself",
    ),
)

_CLASSES: dict[str, Any] = {
    "pygls.io_": pygls.io_,
    "pygls.protocol.JsonRPCProtocol": JsonRPCProtocol,
    "pygls.protocol.LanguageServerProtocol": LanguageServerProtocol,
    "pygls.workspace.Workspace": Workspace,
}


class UntestedPygls(RuntimeError):
    """The installed pygls is not one the patches are tested on."""


def installed_pygls() -> str:
    return metadata.version("pygls")


def tested(version: str) -> bool:
    """Whether `version` is in `TESTED_PYGLS` (a pre-release or local build is not)."""
    release = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if release is None:
        return False
    numbers = tuple(int(part or 0) for part in release.groups())
    return _TESTED_FROM <= numbers < _TESTED_BELOW


def problems(server: LanguageServer, version: str | None = None) -> list[str]:
    """What does not hold of `PATCHED` and `TESTED_PYGLS` for `server` (a new one) and the
    installed pygls (or `version`)."""
    version = installed_pygls() if version is None else version
    found = []
    if not tested(version):
        found.append(f"pygls {version} is installed, the patches are tested on {TESTED_PYGLS}")
    probes: dict[str, Callable[[], object]] = {
        "server": lambda: server,
        "protocol": lambda: server.protocol,
        "workspace": lambda: Workspace(None),
        "document": lambda: TextDocument("file:///probe.py", ""),
    }
    for patched in PATCHED:
        probe = probes.get(patched.owner)
        owner = probe() if probe is not None else _CLASSES[patched.owner]
        where = f"{patched.owner}.{patched.name} ({patched.used_by})"
        if not hasattr(owner, patched.name):
            found.append(f"{where} is gone")
            continue
        if patched.parameters is not None:
            names = tuple(inspect.signature(getattr(owner, patched.name)).parameters)
            if names != patched.parameters:
                found.append(f"{where} takes {names}, not {patched.parameters}")
    return found


def require_tested_pygls(server: LanguageServer) -> None:
    """Raise `UntestedPygls`, naming every problem, unless the patches hold for `server`."""
    found = problems(server)
    if found:
        raise UntestedPygls(
            "Headstart patches private parts of pygls (docs/architecture.md, 'pygls "
            f"patches'), and this pygls does not fit them: {'; '.join(found)}. Install "
            f'"pygls{TESTED_PYGLS}" (pyproject.toml), or check each patch against this '
            "pygls and widen TESTED_PYGLS in server/lsp/pygls_patches.py and the pin together."
        )
