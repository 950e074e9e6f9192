"""End to end, issue 36: a web shop's workspace with 150+ credentials of 50+ kinds in a
dozen file types (`secrets_corpus`), completions at cursors in every file that holds them
and in the files that use them, hovers, and refactor code actions on the holders: none of
the planted values reaches the fake model's request log, while the holders' ordinary code
does (so the prompts did carry those files)."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import (
    cursor_at,
    open_document,
    read_code_actions_as_editors_do,
    suggestion,
    wait_for_log,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from secrets_corpus import MARKERS, Planted, build

from cache.scan import is_secret_name

LANGUAGES = {
    ".py": "python", ".ts": "typescript", ".js": "javascript", ".go": "go", ".java": "java",
    ".rs": "rust", ".php": "php", ".rb": "ruby", ".sh": "shellscript", ".tf": "terraform",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json", ".ini": "ini",
    ".properties": "properties", ".tfvars": "terraform",
}  # fmt: skip
REFACTORED = {
    "shop/settings.py": "settings_marker_shipping_zone",
    "shop/payments.py": "payments_marker_refund_window",
    "shop/keys.py": "keys_marker_rotation_days",
}


def cursors(text: str) -> list[str]:
    """The file with the cursor on a new line of its own: after the first line, in the
    middle, and at the end (so no line is being typed over a secret)."""
    lines = text.split("\n")
    return [
        "\n".join([*lines[:at], "█", *lines[at:]])
        for at in sorted({1, len(lines) // 2, len(lines)})
    ]


def leaked(planted: list[Planted], sent: str) -> list[Planted]:
    """The planted values found in what was sent, whole or by a 12-character piece."""
    out = []
    for secret in planted:
        value = secret.value
        pieces = {value, value[:12], value[-12:], value[len(value) // 2 - 6 : len(value) // 2 + 6]}
        if any(len(piece) >= 8 and piece in sent for piece in pieces):
            out.append(secret)
    return out


async def test_no_planted_secret_reaches_the_model(
    fresh: LanguageClient, fake: FakeBackend, tmp_path: Path
) -> None:
    workspace = tmp_path / "shop"
    planted = build(workspace)
    kinds = {secret.kind for secret in planted}
    holders = {secret.file for secret in planted}
    file_types = {Path(f).suffix or Path(f).name for f in holders}
    assert len(planted) >= 150 and len(kinds) >= 50 and len(file_types) >= 12
    read_code_actions_as_editors_do(fresh)
    fake.script([{"match": "", "text": "pass\n"}])
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url))
    await wait_for_log(fresh, "indexed ", timeout=20)

    users = ["shop/checkout.py", "web/app.ts", "services/main.go"]
    completed = 0
    for name in sorted(holders | set(users)):
        path = workspace / name
        language = LANGUAGES.get(path.suffix, "plaintext")
        for text in cursors(path.read_text()):
            text, position = cursor_at(text)
            uri = open_document(fresh, path, text, language)
            await suggestion(fresh, uri, position)
            completed += 1
            fresh.text_document_did_close(
                types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
            )

    checkout = (workspace / "shop/checkout.py").read_text()
    uri = open_document(fresh, workspace / "shop/checkout.py", checkout)
    for name in ("STRIPE_LIVE_KEY", "settings_marker_shipping_zone", "settings"):
        offset = checkout.index(name)
        line = checkout.count("\n", 0, offset)
        character = offset - checkout.rfind("\n", 0, offset) - 1
        await fresh.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character + 1),
            )
        )

    refactors = 0
    for name, function in REFACTORED.items():
        text = (workspace / name).read_text()
        uri = open_document(fresh, workspace / name, text)
        offset = text.index(function)
        line = text.count("\n", 0, offset)
        at = types.Position(line=line, character=offset - text.rfind("\n", 0, offset) - 1)
        result = await fresh.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=at, end=at),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        actions = [a for a in result or [] if isinstance(a, types.CodeAction)]
        docstring = [a for a in actions if a.title.startswith("Headstart: add a docstring")]
        assert docstring, [a.title for a in actions]
        with contextlib.suppress(JsonRpcException):  # the fake's answer is no docstring:
            await fresh.code_action_resolve_async(docstring[0])  # only its prompt matters
        refactors += 1

    events = fake.events()
    sent = json.dumps(events)
    prompts = sum(1 for event in events if "prompt" in json.dumps(event))
    assert completed >= 60 and refactors == 3 and prompts >= 40
    assert leaked(planted, sent) == []
    shown = [re.search(r"\w*[Mm]arker\w*", marker)[0] for marker in MARKERS.values()]  # type: ignore[index]
    private = [name for name in MARKERS if is_secret_name(Path(name).name)]
    assert private == []
    missing = [m for m in shown if m not in sent]
    assert missing == []  # every holder's own code did reach a prompt
