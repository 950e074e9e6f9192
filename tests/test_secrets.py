"""Secrets stay on the machine: key-like values are masked out of other files' snippets,
and documents that may hold credentials (by name, or by .headstartignore) are never
completed or refactored, so their text never reaches the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.completion.secrets import MASK, mask_secrets
from server.workspace.privacy import private_reason

ROOT = Path(__file__).resolve().parents[1]

KEYS = {
    "aws": "AKIAJ7Q2WZ4PLM5RX3TV",  # AWS's documented AKIAIOSFODNN7EXAMPLE is gitleaks-allowed
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2,
    "openai": "sk-proj-" + "Zq8Xw7Cv6Bn5Mm4Ll3Kk2Jj1",
    "slack": "xoxb-123456789012-abcdefABCDEF",
    "google": "AIza" + "Sy" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6q",
}


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_known_key_formats_are_masked_wherever_they_stand(kind: str) -> None:
    text = f"CLIENT = connect(key='{KEYS[kind]}')\nprint(CLIENT)\n"

    masked = mask_secrets(text, "client.py")

    assert KEYS[kind] not in masked and MASK in masked
    assert masked.endswith("print(CLIENT)\n")


def test_random_values_assigned_to_secret_names_are_masked_and_code_is_not() -> None:
    key_body = ["MIIEowIBAAKCAQEA1b2c3d4e5f6g7h8i9j0", "k1l2m3n4o5p6q7r8s9t0u1v2w3x4y5z6"]
    text = (
        'API_KEY = "q8w7e6r5t4y3u2i1o0p9"\n'
        'db_password: "Zx9!kQ2#vL8@pR5m"\n'
        'headers = {"Authorization": "Bearer dGhpcyBpcyBhIHNlY3JldA"}\n'
        'password = "hunter2hunter2"\n'  # regular, but a password literal: masked all the same
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(key_body)
        + "\n-----END RSA PRIVATE KEY-----\n"
        'TOKENIZER_FILE = "tokenizer.json"\n'  # a "token" name that holds no token
        'token = f"headstart-{uuid.uuid4()}"\n'  # a template, not a literal key
    )

    masked = mask_secrets(text, "settings.py")

    assert masked.splitlines()[:4] == [
        f'API_KEY = "{MASK}"',
        f'db_password: "{MASK}"',
        f'headers = {{"Authorization": "Bearer {MASK}"}}',
        f'password = "{MASK}"',
    ]
    assert not any(line in masked for line in key_body)
    assert masked.splitlines()[-2:] == text.splitlines()[-2:]


def test_headstarts_own_source_has_nothing_to_mask() -> None:
    for path in sorted([*ROOT.glob("server/**/*.py"), *ROOT.glob("cache/*.py")]):
        text = path.read_text(encoding="utf-8")
        assert mask_secrets(text, str(path)) == text, path


def test_documents_private_by_name_or_by_headstartignore(tmp_path: Path) -> None:
    (tmp_path / ".headstartignore").write_text("private/\n*.secret.py\n")
    roots = [tmp_path]

    assert private_reason(tmp_path / ".env", roots) == "its name marks a file of credentials"
    assert private_reason(tmp_path / "deploy" / "server.pem", roots) is not None
    assert private_reason(tmp_path / "private" / "notes.py", roots) == (
        ".headstartignore leaves it out"
    )
    assert private_reason(tmp_path / "app" / "keys.secret.py", roots) is not None
    assert private_reason(tmp_path / "app" / "main.py", roots) is None
    outside = tmp_path.parent / "elsewhere"
    assert private_reason(outside / ".ssh" / "config", roots) is not None
    assert private_reason(outside / "notes.py", roots) is None
