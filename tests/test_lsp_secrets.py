"""End to end: secrets planted in a workspace never reach the model.

Credentials sit where they do in real projects: a `.env`, a private key, a folder the
team listed in `.headstartignore`, and keys pasted into a settings module that the file
being edited imports. The editor completes in the code, in the `.env` and in the ignored
folder; the fake model's request log must hold none of the planted values, while the
settings module's ordinary code does reach the prompts (the test is not vacuous)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import fast_settings, start_session
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, suggestion, wait_for_log
from pytest_lsp import LanguageClient

PLANTED = {
    ".env": "OPENAI_API_KEY=sk-proj-PLANTEDenvFILEkey0123456789\n",
    "deploy/server.pem": (
        "-----BEGIN PRIVATE KEY-----\nPLANTEDpemBODYx9\n-----END PRIVATE KEY-----\n"
    ),
    ".headstartignore": "private/\n",
    "private/vault.py": 'def vault_code() -> str:\n    return "PLANTEDignoredVAULT42"\n',
    "inventory/settings.py": (
        '"""Shop settings."""\n\n'
        'STRIPE_SECRET_KEY = "PLANTEDq8w7e6r5t4y3u2i1"\n'
        'AWS_ACCESS = "AKIAPLANTEDKEY123456"\n'
        'GITHUB_TOKEN = "ghp_PLANTEDgithub0123456789abcdefghijklmn"\n\n\n'
        "def shipping_rate(weight_kg: float) -> float:\n"
        "    return 4.5 + 0.8 * weight_kg\n"
    ),
}
SECRETS = (
    "PLANTEDenvFILEkey",
    "PLANTEDpemBODY",
    "PLANTEDignoredVAULT",
    "PLANTEDq8w7e6r5t4y3u2i1",
    "AKIAPLANTEDKEY123456",
    "ghp_PLANTEDgithub",
)
CHECKOUT = (
    "from inventory.settings import AWS_ACCESS, GITHUB_TOKEN, STRIPE_SECRET_KEY, shipping_rate\n"
    "from private.vault import vault_code\n\n\n"
    "def checkout(weight_kg: float) -> float:\n"
    "    fee = shipping_rate(█)\n"
)


async def test_planted_secrets_never_reach_the_model(
    fresh: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    for name, text in PLANTED.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    fake.script([{"match": "", "text": "weight_kg)\n"}])
    await start_session(fresh, "vscode", workspace, fast_settings(fake.url, prefetch=True))
    await wait_for_log(fresh, "indexed ", timeout=10)

    text, position = cursor_at(CHECKOUT)
    uri = open_document(fresh, workspace / "inventory" / "checkout.py", text)
    assert await suggestion(fresh, uri, position) == "weight_kg"
    for name in (".env", "private/vault.py", "deploy/server.pem"):
        text = (workspace / name).read_text()
        lines = text.splitlines()
        at = cursor_at(text[: len(text) - len(lines[-1]) - 1] + "█" + lines[-1] + "\n")
        private = open_document(fresh, workspace / name, at[0])
        assert await suggestion(fresh, private, at[1]) == ""

    sent = json.dumps(fake.events())
    assert "def shipping_rate" in sent  # the settings module's code did reach the prompt
    leaked = [secret for secret in SECRETS if secret in sent]
    assert leaked == []
    assert logs(fresh).count("it stays private") == 3
