"""A web shop's workspace with credentials planted as real repositories hold them.

Service keys of well-known formats come from gitleaks' own rule examples (the true
positives of `tests/fixtures/secrets/gitleaks_examples.json`, one per rule, the secret
taken as the rule's own secret group says), each assigned to a name of the service in two
syntaxes; the rest are written here: database and broker URLs with passwords, Django and
Flask keys, tokens in YAML, INI, TOML, compose files, Kubernetes `Secret` manifests,
tfvars, shell scripts, call arguments, headers, JWTs and private-key blocks. Every planted
value is recorded with its kind and file (`Planted`); the code files also carry ordinary
code (`MARKERS`) that must reach the prompts, so a test of "none leaked" is not vacuous.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from cache.secrets.gitleaks import rule_set, shannon_entropy

EXAMPLES = Path(__file__).parent / "fixtures" / "secrets" / "gitleaks_examples.json"
RULE_PATHS = {"hashicorp-tf-password": "main.tf"}


@dataclass(frozen=True)
class Planted:
    value: str
    kind: str
    file: str


def vendor_keys() -> list[tuple[str, str]]:
    """(rule id, secret) for each gitleaks rule whose examples hold a plain, random-looking
    secret: the rule's own secret group of its first such true positive."""
    rules = rule_set()
    known = {rule.id for rule in rules.rules}
    found = []
    for rule_id, cases in sorted(json.loads(EXAMPLES.read_text()).items()):
        if rule_id not in known:
            continue
        for example in cases["tps"]:
            data = example.encode()
            hits = [
                f for f in rules.find(example, RULE_PATHS.get(rule_id, "x")) if f.rule == rule_id
            ]
            if not hits:
                continue
            secret = data[hits[0].start : hits[0].end].decode()
            if (
                len(secret) >= 12
                and shannon_entropy(secret) > 3
                and not re.search(r"[\s\"'\\`]", secret)
            ):
                found.append((rule_id, secret))
                break
    return found


def _name(rule_id: str) -> str:
    name = rule_id.upper().replace("-", "_")
    return name if re.search(r"KEY|TOKEN|SECRET|PASSWORD|PAT$", name) else name + "_KEY"


PEM_RSA = """-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAq7BFUpkGp3+LQmlQYx2eqzDV+xeG8kx/sQFV18S5JhzGeIJN
A72wSeukEPojtqUyX2J0CciPBh7eqclQ2zpAswjA6oGp4H7vRE7t3fbSAzTQk7Jd
VKJ8KBc1/7U8Xy4n6qGk3z2hJd8Wq5kQ1dUgY8P6nT0bX9vE7oZr4m2aF3cLhS5i
-----END RSA PRIVATE KEY-----"""
PEM_EC = """-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oWjMhx0U6xS9oAoGCCqGSM49
AwEHoUQDQgAEq6M5r8kL0pYz3sVb9nX2cWd7T1uFhR4jK8mN0pQ2sT5vW8yZ1aB3
-----END EC PRIVATE KEY-----"""
PEM_OPENSSH = """-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACDx2Hk9pQ3mZ8vR7sT1uW4yX6zA0bC5dE8fG2hJ4kL7mN9oP1qR3sT5uV7w
-----END OPENSSH PRIVATE KEY-----"""
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJzaG9wLWFkbWluIiwiaWF0IjoxNzAwMDAwMDAwfQ"
    ".Qm9yZWQ3X2p3dF9zaWduYXR1cmVfZm9yX3Rlc3Rz"
)
HAND_WRITTEN: list[tuple[str, str]] = [
    ("stripe-live", "sk_live_51Hc8ZqLmNoPqRsTuVwXyZ0123456789abcdEFGHijkl"),
    ("stripe-restricted", "rk_live_51Hc8ZqRtYuIoPaSdFgHjKlZxCvBnM0987654321"),
    ("aws-access-key-id", "AKIA4QZPX7LMN2RT5VWY"),
    ("aws-secret-access-key", "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"),
    ("github-pat", "ghp_R8kL2mN5pQ7sT1vW4yZ6bC9dF3gH0jK2lM4n"),
    (
        "github-fine-grained",
        "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Gh5Jk",
    ),
    ("gitlab-pat", "glpat-Xy7Zk2Lm9Np4Qr6St8Uv"),
    ("slack-bot-token", "xoxb-2748392017-8473920184-Qm8ZkL2Np5Rt7Vw9Xy1Ab3Cd"),
    ("sendgrid", "SG.Qm8ZkL2Np5Rt7Vw9Xy1Ab3.Cd4Ef6Gh8Ij0Kl2Mn4Op6Qr8St0Uv2Wx4Yz6Ab8Cd0Ef"),
    ("google-api-key", "AIzaSyB7kL2mN5pQ7sT1vW4yZ6bC9dF3gH0jK2l"),
    ("openai", "sk-proj-Qm8ZkL2Np5Rt7Vw9Xy1Ab3Cd4Ef6Gh8Ij0Kl2Mn4Op6T3BlbkFJ"),
    (
        "anthropic",
        "sk-ant-api03-Qm8ZkL2Np5Rt7Vw9Xy1Ab3Cd4Ef6Gh8Ij0Kl2Mn4Op6Qr8St0Uv2Wx4Yz6Ab8Cd0Ef2Gh4Ij6Kl8Mn0Op2Qr4St6Uv8Wx0Yz2AA",
    ),
    ("npm-token", "npm_Qm8ZkL2Np5Rt7Vw9Xy1Ab3Cd4Ef6Gh8Ij0K"),
    (
        "pypi-token",
        "pypi-AgEIcHlwaS5vcmcCJGQ4ZTJhYjE3LTk4YzEtNGE2Ni1iZTM3LTQxYjYzYjlkMWYyZAACKlszLCJmODk",
    ),
    ("shopify", "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"),
    ("twilio", "SK4f9b2c7d1e8a3f6b0c5d9e2a7f1b4c8d"),
    ("digitalocean", "dop_v1_4f9b2c7d1e8a3f6b0c5d9e2a7f1b4c8d6e0a3f7b1c5d9e2a4f8b3c7d1e6a0f5b"),
]
GENERIC: list[tuple[str, str]] = [
    ("django-secret-key", "django-insecure-8f$k2@x!q9z#m1w^p7r&t3y*u5i0o"),
    ("flask-secret-key", "f7K2#mQ9!pX4&vR8zL1"),
    ("postgres-url-password", "Pg_s3cret!2024"),
    ("mysql-url-password", "My5ql-R00t-Pw"),
    ("mongodb-url-password", "M0ng0Atl4sPw9"),
    ("redis-url-password", "r3d1sCach3Pw7"),
    ("amqp-url-password", "R4bb1tMqPw55"),
    ("smtp-password", "M41lP4ss!word"),
    ("celery-broker-password", "C3l3ryBr0k3r!"),
    ("jwt-constant", JWT),
    ("bearer-header", "t0k3nV4lu3Zq8Lm2Np5Rt7"),
    ("basic-header", "YWRtaW46UzNjcjN0UGFzcw=="),
    ("x-api-key-header", "xk_9Fq2Lm7Np4Rt8Vw1Zy3Bc"),
    ("call-argument-password", "Kw4rgP4ssw0rd!"),
    ("call-argument-api-key", "abc123XYZ789def456ghi"),
    ("yaml-unquoted-password", "Y4mlPl41nPw!"),
    ("yaml-token", "yt_Qm8ZkL2Np5Rt7Vw9"),
    ("toml-password", "T0mlS3cr3t#42"),
    ("compose-postgres-password", "C0mp0s3Pg!pw"),
    ("compose-env-token", "ce_Zq8Lm2Np5Rt7Vw9Xy1"),
    ("shell-export-password", "Sh3llExp0rt!pw"),
    ("shell-pgpassword", "PgP4ss_Sh3ll9"),
    ("dockerfile-env-token", "df_tok_7Hq2LmZ9pX4vR8"),
    ("hex-signing-key", "f3c9a1b27d4e8f60a5b2c7d9e1f3a5b7"),
    ("webhook-secret", "whsec_Qm8ZkL2Np5Rt7Vw9Xy1Ab3Cd4Ef"),
    ("session-secret", "s3ss10n-S3cr3t-K3y-9f8e7d"),
    ("go-const-password", "G0C0nstPw!x9"),
    ("java-jdbc-password", "J4v4Jdbc!pw7"),
    ("rust-const-token", "rs_tok_Qm8ZkL2Np5Rt7Vw9"),
    ("php-password", "Php_Db_Pw_77!x"),
    ("ruby-secret", "rb5ecretK3yBase64Zq8Lm2Np5Rt7"),
    ("ts-client-secret", "cs_Qm8ZkL2Np5Rt7Vw9Xy1Ab3"),
    ("terraform-password", "Tf_h4shic0rp!pw"),
    ("json-config-token", "jc_tok_Zq8Lm2Np5Rt7Vw9Xy"),
    ("encryption-key", "3nCrYpt10nK3y-B64-Zq8Lm2Np5"),
]
"""(kind, value) written into the files below by kind."""
CONTENT_SECRETS: list[tuple[str, str]] = [
    ("k8s-secret-base64", "UGdfazhzX1MzY3IzdF9QYXNz"),
    ("k8s-secret-string-data", "K8sStr1ngD4t4!pw"),
    ("service-account-private-key-id", "4f9b2c7d1e8a3f6b0c5d9e2a7f1b4c8d6e0a3f7b"),
    ("aws-credentials-ini", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Pl2Xk4Z"),
    ("ini-database-password", "1n1D4t4b4s3!pw"),
    ("ini-mail-password", "1n1M41l!pw99"),
    ("properties-password", "Pr0pS3cr3t!pw"),
    ("tfvars-password", "TfV4rs_db_Pw!"),
    ("tfvars-api-token", "tfv_tok_Qm8ZkL2Np5Rt7"),
    ("npmrc-auth-token", "npm_Zq8Lm2Np5Rt7Vw9Xy1Ab3Cd4Ef6Gh8Ij0K"),
    ("dotenv-secret", "d0t3nv_S3cr3t_Zq8Lm2"),
]
MARKERS = {
    "shop/settings.py": "def settings_marker_shipping_zone",
    "shop/payments.py": "def payments_marker_refund_window",
    "shop/mailer.py": "def mailer_marker_retry_delay",
    "shop/keys.py": "def keys_marker_rotation_days",
    "web/config.ts": "export function configMarkerLocale",
    "web/client.js": "function clientMarkerTimeout",
    "services/gateway.go": "func GatewayMarkerRetries",
    "src/main/java/shop/Vault.java": "static int vaultMarkerCapacity",
    "src/config.rs": "pub fn config_marker_threads",
    "app/config.php": "function php_marker_currency",
    "config/initializers/shop.rb": "def ruby_marker_batch_size",
    "scripts/deploy.sh": "deploy_marker_release()",
    "infra/main.tf": 'variable "tf_marker_region"',
}
"""Ordinary code of each file that holds secrets: it must reach the prompts."""


def build(root: Path) -> list[Planted]:
    """Write the workspace under `root`; the planted values, with their kinds and files."""
    planted: list[Planted] = []
    files: dict[str, list[str]] = {}

    def plant(file: str, kind: str, value: str, line: str) -> None:
        files.setdefault(file, []).append(line)
        planted.append(Planted(value, kind, file))

    vendor = vendor_keys() + HAND_WRITTEN
    python_file, other = "shop/settings.py", [
        "web/config.ts", "services/gateway.go", "config/services.yaml", "config/app.toml",
        "scripts/deploy.sh", "src/main/java/shop/Vault.java", "src/config.rs",
        "app/config.php", "config/initializers/shop.rb", "Dockerfile", "config/keys.json",
    ]  # fmt: skip
    for number, (kind, value) in enumerate(vendor):
        name = _name(kind)
        plant(python_file, kind, value, f'{name} = "{value}"')
        file = other[number % len(other)]
        plant(file, kind, value, _assignment(file, name, value))
    generic = dict(GENERIC)
    g = generic.__getitem__
    lines = [
        ("shop/settings.py", "django-secret-key", f"SECRET_KEY = '{g('django-secret-key')}'"),
        ("shop/settings.py", "postgres-url-password",
         f'DATABASE_URL = "postgres://shop:{g("postgres-url-password")}@db.internal:5432/shop"'),
        ("shop/settings.py", "mysql-url-password",
         f'LEGACY_DB = "mysql://root:{g("mysql-url-password")}@legacy:3306/orders"'),
        ("shop/settings.py", "mongodb-url-password",
         f'MONGO_URI = "mongodb+srv://catalog:{g("mongodb-url-password")}@cluster0.mongodb.net/cat"'),
        ("shop/settings.py", "redis-url-password",
         f'CACHE_URL = "redis://:{g("redis-url-password")}@cache:6379/1"'),
        ("shop/settings.py", "amqp-url-password",
         f'BROKER_URL = "amqp://shop:{g("amqp-url-password")}@rabbit:5672/"'),
        ("shop/settings.py", "smtp-password", f'EMAIL_HOST_PASSWORD = "{g("smtp-password")}"'),
        ("shop/settings.py", "hex-signing-key", f'SIGNING_KEY = "{g("hex-signing-key")}"'),
        ("shop/settings.py", "webhook-secret", f'STRIPE_WEBHOOK_SECRET = "{g("webhook-secret")}"'),
        ("shop/settings.py", "encryption-key", f'FIELD_ENCRYPTION_KEY = "{g("encryption-key")}"'),
        ("shop/payments.py", "flask-secret-key",
         f'app.config["SECRET_KEY"] = "{g("flask-secret-key")}"'),
        ("shop/payments.py", "jwt-constant", f'SERVICE_JWT = "{g("jwt-constant")}"'),
        ("shop/payments.py", "bearer-header",
         f'HEADERS = {{"Authorization": "Bearer {g("bearer-header")}"}}'),
        ("shop/payments.py", "x-api-key-header",
         f'PARTNER_HEADERS = {{"X-Api-Key": "{g("x-api-key-header")}"}}'),
        ("shop/payments.py", "call-argument-api-key",
         f'gateway = Gateway(api_key="{g("call-argument-api-key")}", timeout=5)'),
        ("shop/mailer.py", "call-argument-password",
         f'smtp.login("shop@example.com", password="{g("call-argument-password")}")'),
        ("shop/mailer.py", "celery-broker-password",
         f'CELERY = dict(broker="amqp://worker:{g("celery-broker-password")}@rabbit//")'),
        ("shop/mailer.py", "basic-header",
         f'AUTH = {{"Authorization": "Basic {g("basic-header")}"}}'),
        ("config/services.yaml", "yaml-unquoted-password",
         f"database:\n  password: {g('yaml-unquoted-password')}"),
        ("config/services.yaml", "yaml-token", f"search:\n  api_token: {g('yaml-token')}"),
        ("config/app.toml", "toml-password", f'[db]\npassword = "{g("toml-password")}"'),
        ("docker-compose.yml", "compose-postgres-password",
         f"services:\n  db:\n    image: postgres:16\n    environment:\n"
         f"      POSTGRES_PASSWORD: {g('compose-postgres-password')}"),
        ("docker-compose.yml", "compose-env-token",
         f"  web:\n    environment:\n      - SEARCH_TOKEN={g('compose-env-token')}"),
        ("scripts/deploy.sh", "shell-export-password",
         f"export ADMIN_PASSWORD={g('shell-export-password')}"),
        ("scripts/deploy.sh", "shell-pgpassword",
         f"PGPASSWORD='{g('shell-pgpassword')}' psql -h db -U shop"),
        ("Dockerfile", "dockerfile-env-token", f"ENV SEARCH_API_TOKEN={g('dockerfile-env-token')}"),
        ("web/client.js", "session-secret",
         f"app.use(session({{ secret: '{g('session-secret')}', resave: false }}));"),
        ("services/gateway.go", "go-const-password",
         f'const dbPassword = "{g("go-const-password")}"'),
        ("src/main/java/shop/Vault.java", "java-jdbc-password",
         f'    static final String URL = "jdbc:postgresql://db/shop?user=shop&password={g("java-jdbc-password")}";'),
        ("src/config.rs", "rust-const-token",
         f'pub const SEARCH_TOKEN: &str = "{g("rust-const-token")}";'),
        ("app/config.php", "php-password", f"$db_password = '{g('php-password')}';"),
        ("config/initializers/shop.rb", "ruby-secret",
         f'SECRET_KEY_BASE = "{g("ruby-secret")}"'),
        ("web/config.ts", "ts-client-secret",
         f'export const oauth = {{ clientSecret: "{g("ts-client-secret")}" }};'),
        ("infra/main.tf", "terraform-password",
         f'resource "aws_db_instance" "shop" {{\n  password = "{g("terraform-password")}"\n}}'),
        ("config/keys.json", "json-config-token", f'"search_token": "{g("json-config-token")}"'),
    ]  # fmt: skip
    for file, kind, line in lines:
        plant(file, kind, generic[kind], line)
    for file, kind, pem in (
        ("shop/keys.py", "pem-rsa", PEM_RSA),
        ("shop/keys.py", "pem-ec", PEM_EC),
        ("shop/keys.py", "pem-openssh", PEM_OPENSSH),
    ):
        name = kind.upper().replace("-", "_")
        plant(file, kind, pem.split("\n")[1], f'{name} = """\n{pem}\n"""')
        planted.append(Planted(pem.split("\n")[2], kind, file))
    texts = {file: _wrap(file, body) for file, body in files.items()}
    c = dict(CONTENT_SECRETS).__getitem__
    texts.update(
        {
            "k8s/db-secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n"
            f"type: Opaque\ndata:\n  password: {c('k8s-secret-base64')}\n"
            f"stringData:\n  admin: {c('k8s-secret-string-data')}\n",
            "deploy/gcp-sa.json": json.dumps(
                {
                    "type": "service_account",
                    "project_id": "shop-prod",
                    "private_key_id": c("service-account-private-key-id"),
                    "private_key": PEM_RSA.replace("RSA ", "") + "\n",
                    "client_email": "shop@shop-prod.iam.gserviceaccount.com",
                },
                indent=2,
            ),
            "deploy/aws.ini": "[default]\naws_access_key_id = AKIA4QZPX7LMN2RT5VW9\n"
            f"aws_secret_access_key = {c('aws-credentials-ini')}\n",
            "config/app.ini": f"[database]\nhost = db\npassword = {c('ini-database-password')}\n"
            f"\n[mail]\nsmtp_password = {c('ini-mail-password')}\n",
            "config/application.properties": "spring.datasource.url=jdbc:postgresql://db/shop\n"
            f"spring.datasource.password={c('properties-password')}\n",
            "infra/prod.tfvars": f'db_password = "{c("tfvars-password")}"\n'
            f'search_api_token = "{c("tfvars-api-token")}"\n',
            ".npmrc": f"//registry.npmjs.org/:_authToken={c('npmrc-auth-token')}\n",
            ".env.production": f"SESSION_SECRET={c('dotenv-secret')}\n",
        }
    )
    for kind, value in CONTENT_SECRETS:
        holder = next(name for name, text in texts.items() if value in text)
        planted.append(Planted(value, kind, holder))
    texts.update(USERS)
    for name, text in texts.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return planted


def _assignment(file: str, name: str, value: str) -> str:
    lower = name.lower()
    camel = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), lower)
    suffix = file.rsplit(".", 1)[-1] if "." in file else file
    return {
        "ts": f'export const {camel} = "{value}";',
        "go": f'const {camel[0].upper() + camel[1:]} = "{value}"',
        "yaml": f"{lower}: {value}",
        "toml": f'{lower} = "{value}"',
        "sh": f"export {name}={value}",
        "java": f'    static final String {name} = "{value}";',
        "rs": f'pub const {name}: &str = "{value}";',
        "php": f"${lower} = '{value}';",
        "rb": f'{name} = "{value}"',
        "Dockerfile": f"ENV {name}={value}",
        "json": f'"{lower}": "{value}"',
    }[suffix]


def _wrap(file: str, lines: list[str]) -> str:
    """The file's planted lines inside ordinary code of its language."""
    body = "\n".join(lines)
    marker = MARKERS.get(file, "")
    if file.endswith(".py"):
        head = '"""Shop configuration."""\n\nimport os\n\n'
        head += "from shop.gateway import Gateway, app, smtp\n\n"
        tail = "(order_total: float) -> str:\n    return 'eu' if order_total > 50 else 'local'\n"
        return f"{head}{body}\n\n\n{marker}{tail}"
    if file.endswith(".ts"):
        return f"{body}\n\n{marker}(lang: string): string {{\n  return lang.toLowerCase();\n}}\n"
    if file.endswith(".js"):
        tail = "(ms) {\n  return ms * 2;\n}\nmodule.exports = { app };\n"
        return f"const app = require('express')();\n{body}\n\n{marker}{tail}"
    if file.endswith(".go"):
        return f"package services\n\n{body}\n\n{marker}(n int) int {{\n\treturn n + 1\n}}\n"
    if file.endswith(".java"):
        tail = "(int n) {\n        return n * 2;\n    }\n}\n"
        return f"package shop;\n\npublic class Vault {{\n{body}\n\n    {marker}{tail}"
    if file.endswith(".rs"):
        return f"{body}\n\n{marker}(n: usize) -> usize {{\n    n * 2\n}}\n"
    if file.endswith(".php"):
        return f"<?php\n{body}\n\n{marker}($amount) {{\n    return $amount . ' EUR';\n}}\n"
    if file.endswith(".rb"):
        return f"{body}\n\n{marker}(n)\n  n * 10\nend\n"
    if file.endswith(".sh"):
        return f"#!/bin/sh\nset -e\n{body}\n\n{marker} {{\n  echo releasing\n}}\n"
    if file.endswith(".tf"):
        return f'{marker} {{\n  default = "eu-west-1"\n}}\n\n{body}\n'
    if file.endswith(".json"):
        return "{\n  " + ",\n  ".join(lines) + "\n}\n"
    return body + "\n"


USERS = {
    "shop/__init__.py": "",
    "shop/gateway.py": (
        '"""Payment gateway client."""\n\n\nclass Gateway:\n'
        "    def __init__(self, api_key: str, timeout: int) -> None:\n"
        "        self.api_key = api_key\n        self.timeout = timeout\n\n\n"
        "app = None\nsmtp = None\n"
    ),
    "shop/checkout.py": (
        "from shop import settings\n"
        "from shop.keys import keys_marker_rotation_days\n"
        "from shop.mailer import mailer_marker_retry_delay\n"
        "from shop.payments import payments_marker_refund_window\n"
        "from shop.settings import STRIPE_LIVE_KEY, settings_marker_shipping_zone\n\n\n"
        "def checkout(total: float) -> str:\n"
        "    zone = settings_marker_shipping_zone(total)\n"
        "    window = payments_marker_refund_window(total)\n"
        "    return zone\n"
    ),
    "web/app.ts": (
        'import { configMarkerLocale, oauth } from "./config";\n\n'
        "export function start(lang: string): string {\n"
        "  return configMarkerLocale(lang);\n}\n"
    ),
    "services/main.go": (
        "package services\n\nfunc Run() int {\n\treturn GatewayMarkerRetries(3)\n}\n"
    ),
}
"""Files that use the holders: completions here get them as context."""
