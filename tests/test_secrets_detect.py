"""The secret detector (`cache.secrets`): gitleaks' vendored rules against gitleaks' own
examples, the generic rules on config and code syntaxes, private-key blocks, the open
document's window with the cursor's line, and the index's spans kept with the digest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cache.index import ProjectIndex
from cache.secrets import (
    MASK,
    find_secrets,
    mask_text,
    mask_window,
    masked_lines,
    restore_secrets,
    secret_file_reason,
    secret_values,
)
from cache.secrets.gitleaks import rule_set

EXAMPLES = json.loads(
    (Path(__file__).parent / "fixtures" / "secrets" / "gitleaks_examples.json").read_text()
)
RULE_PATHS = {
    "hashicorp-tf-password": "main.tf",
    "kubernetes-secret-yaml": "secret.yaml",
    "freemius-secret-key": "config.php",
    "nuget-config-password": "nuget.config",
}


def test_gitleaks_rules_find_their_own_true_positives_and_not_their_false_ones() -> None:
    rules = rule_set()
    known = {rule.id for rule in rules.rules}
    missed, matched = [], []
    checked = 0
    for rule_id, cases in EXAMPLES.items():
        if rule_id not in known:  # multi-line examples only (service account JSON)
            continue
        path = RULE_PATHS.get(rule_id, "file")
        for example in cases["tps"]:
            checked += 1
            if not any(f.rule == rule_id for f in rules.find(example, path)):
                missed.append((rule_id, example))
        for example in cases["fps"]:
            checked += 1
            if any(f.rule == rule_id for f in rules.find(example, path)):
                matched.append((rule_id, example))
    assert checked > 400
    assert missed == []
    assert matched == []


@pytest.mark.parametrize(
    ("path", "line", "secret"),
    [
        ("settings.py", 'STRIPE_KEY = "sk_live_51H8xKqLmNoPqRsTuVwXyZ0123456789abcd"', "sk_live_"),
        ("settings.py", "SECRET_KEY = 'django-insecure-8f$k2@x!q9z#m1w^p7r'", "django-insecure"),
        ("app.py", 'DB = "postgres://shop:Pg_s3cret!2024@db:5432/shop"', "Pg_s3cret!2024"),
        ("config.ini", "password = Pa55w0rd!", "Pa55w0rd!"),
        ("docker-compose.yml", "      POSTGRES_PASSWORD: s3cr3t-Pg-pass", "s3cr3t-Pg-pass"),
        ("deploy.sh", "export DB_PASSWORD=hunter2hunter", "hunter2hunter"),
        ("client.py", 'api = Client(api_key="abc123XYZ789def456")', "abc123XYZ789def456"),
        ("client.ts", 'headers: { Authorization: "Bearer t0k3nV4lu3abcdef12" }', "t0k3nV4lu3"),
        ("app.properties", "mail.smtp.password=M41lP4ss!", "M41lP4ss!"),
        ("main.go", 'const signingKey = "f3c9a1b27d4e8f60a5b2c7d9e1f3a5b7"', "f3c9a1b27d4e"),
        ("Dockerfile", "ENV API_TOKEN=tok_7Hq2LmZ9pX4vR8", "tok_7Hq2LmZ9pX4vR8"),
        ("values.yaml", "  clientSecret: 9d8f7g6h5j4k3l2", "9d8f7g6h5j4k3l2"),
    ],
)
def test_generic_rules_mask_values_of_secret_names_in_every_syntax(
    path: str, line: str, secret: str
) -> None:
    masked = mask_text(line, path)
    assert secret not in masked
    assert MASK in masked


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("auth.py", "password = get_password()"),
        ("auth.py", "    return db.connect(user=user, password=password)"),
        ("auth.py", 'TOKEN_URL = "https://auth.example.com/oauth/token"'),
        ("settings.py", 'AUTH_USER_MODEL = "accounts.User"'),
        ("settings.py", 'PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]'),
        ("forms.py", 'password = forms.CharField(label="Password", widget=PasswordInput)'),
        ("app.ts", "const token = await getToken(request);"),
        ("app.py", 'secret_name = "shop-db"'),
        ("config.yaml", "  password: ${DB_PASSWORD}"),
        ("api.py", 'key = "name"'),
        ("api.py", 'headers["Authorization"] = f"Bearer {token}"'),
        ("sql.py", "MAX_GROUPING_TOKENS = 10000"),
        ("http.py", "#   token          = 1*tchar"),
        ("model.yaml", "max_tokens: 512"),
        ("auth.py", '__all__ = ["Auth", "BasicAuth", "DigestAuth", "NetRCAuth"]'),
        ("client.py", "return self.send(request, auth=auth, follow_redirects=follow_redirects)"),
        ("auth.py", "# the server answers with HTTP Basic authentication."),
        ("urls.py", 'ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"'),
    ],
)
def test_generic_rules_leave_code_alone(path: str, line: str) -> None:
    assert mask_text(line, path) == line


PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA1234567890abcdefghijklmnopqrstuvwxyzABCDEFGHIJ\n"
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n"
    "-----END RSA PRIVATE KEY-----\n"
)


def test_private_key_block_lines_are_masked_wherever_a_window_starts() -> None:
    document = (
        'KEY = """\\\n'
        + PEM
        + '"""\n\nif line.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    x = 1\n'
    )
    found = find_secrets(document, "keys.py")
    assert sorted(found) == [2, 3]
    below_begin = document.split("\n", 3)[3]  # a window that starts inside the block
    prefix, suffix = mask_window(below_begin, "", document, "keys.py")
    assert "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP" not in prefix
    assert 'line.startswith("-----BEGIN RSA PRIVATE KEY-----"):' in prefix + suffix


def test_the_cursor_line_is_left_alone_until_its_value_is_complete() -> None:
    document = 'A = "ghp_R8kL2mN5pQ7sT1vW4yZ6bC9dF3gH0jK2lM4n"\nGITHUB = "ghp_Zq8Lm2Np5R'
    prefix, _ = mask_window(document, "", document, "conf.py")
    assert prefix.startswith('A = "<redacted>"\n')
    assert prefix.endswith('GITHUB = "ghp_Zq8Lm2Np5R')  # being typed: left as it is
    done = document + 't7Vw9Xy1Ab3Cd4Ef6Gh8Ij0Kl2Mn"\n'
    prefix, _ = mask_window(done, "", done, "conf.py")
    assert "ghp_Zq8Lm2Np5R" not in prefix  # the cursor moved off the line
    at_end = 'B = "ghp_R8kL2mN5pQ7sT1vW4yZ6bC9dF3gH0jK2lM4n"'
    prefix, _ = mask_window(at_end, "\nC = 1\n", at_end + "\nC = 1\n", "conf.py")
    assert prefix == 'B = "<redacted>"'  # closed by its quote: complete


def test_a_rewrite_gets_the_users_secrets_back() -> None:
    code = 'def pay():\n    key = "sk_live_51H8xKqLmNoPqRsTuVwXyZ0123456789abcd"\n    return key\n'
    masked = mask_text(code, "pay.py")
    assert "sk_live" not in masked
    answer = masked.replace("def pay():", 'def pay():\n    """Pay."""')
    assert restore_secrets(answer, secret_values(code, code, "pay.py")) == code.replace(
        "def pay():", 'def pay():\n    """Pay."""'
    )


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("k8s/db-secret.yaml", "apiVersion: v1\nkind: Secret\ndata:\n  password: cGFzcw==\n"),
        (
            "gcp/sa.json",
            '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMII"}',
        ),
        ("aws/credentials.ini", "[default]\naws_secret_access_key = abc\n"),
        ("prod.tfvars", 'db_password = "Tf_s3cret!pass"\n'),
    ],
)
def test_files_that_are_secrets_by_their_content(path: str, text: str) -> None:
    assert secret_file_reason(text, path) is not None


def test_spans_are_found_once_at_index_time_and_kept_with_the_digest(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    settings = 'import os\n\nSTRIPE_KEY = "sk_live_51H8xKqLmNoPqRsTuVwXyZ0123456789abcd"\n'
    (root / "settings.py").write_text(settings)
    (root / "secret.yaml").write_text("kind: Secret\ndata:\n  token: c2VjcmV0\n")
    cache_root = tmp_path / "cache"
    index = ProjectIndex(root, cache_dir=cache_root)
    index.build()
    record = index.records["settings.py"]
    assert record.secrets == ((2, 14, 58),)
    assert "secret.yaml" not in index.records  # a Kubernetes Secret, like a .env
    index.close()
    warm = ProjectIndex(root, cache_dir=cache_root)
    warm.build()
    assert warm.records["settings.py"].secrets == record.secrets
    lines = masked_lines(settings, "other.py", (record.digest, record.secrets))
    assert lines[2] == 'STRIPE_KEY = "<redacted>"'
    warm.close()
