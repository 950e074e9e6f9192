"""Secrets no vendor format names: values of key-like names in any config or code syntax,
passwords inside URLs, bearer and basic credentials, high-entropy literals, and the lines
of private-key blocks.

gitleaks' own generic rule wants a value of 10+ characters with 3.5 bits of entropy and no
pure-letter value, so `POSTGRES_PASSWORD: s3cr3t!`, `password = "hunter2!"` or an INI
`secret = Pa55word` pass it; here a name that says "this is a secret" is enough, and the
value's shape only has to rule out code (a variable, a call, a template reference).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from cache.secrets.gitleaks import Finding, shannon_entropy

SECRET_WORDS = frozenset(
    {
        "password", "passwd", "pwd", "passphrase", "secret", "secrets", "token",
        "apikey", "credential", "credentials", "creds", "auth", "authorization",
        "dsn", "salt", "pepper", "privatekey", "secretkey", "accesskey", "signingkey",
        "masterkey", "encryptionkey", "sessionkey", "clientsecret", "webhooksecret",
    }
)  # fmt: skip
"""A name holding one of these words (after splitting snake, kebab, dot and camel case,
with "api key", "private key", ... joined) names a secret."""
COUNTING = frozenset({"max", "min", "num", "n", "count", "total", "limit"})
SECRET_ENDINGS = ("password", "passwd", "secret", "token", "apikey")
"""A word ending so names a secret too: `PGPASSWORD`, `dbsecret`."""
KEY_PAIRS = frozenset({"api", "private", "secret", "access", "signing", "master", "encryption",
                       "session", "client", "webhook", "license", "app", "account", "service",
                       "hmac", "jwt", "crypt", "cipher", "aes"})  # fmt: skip
"""Words that make "<word> key" (or "<word> secret") a secret's name."""
NOT_SECRET_ENDS = frozenset(
    {
        "name", "names", "url", "uri", "urls", "endpoint", "field", "fields", "type", "types",
        "id", "ids", "file", "files", "path", "paths", "length", "len", "size",
        "prefix", "env", "var", "count", "max", "min", "timeout", "ttl", "expiry", "expires",
        "expiration", "format", "mode", "class", "kind", "label", "placeholder", "pattern",
        "regex", "hint", "dir", "help", "message", "msg", "error", "errors", "required",
        "enabled", "valid", "validator", "validators", "policy", "model", "backend",
        "backends", "handler", "middleware", "provider", "method", "methods", "scheme",
        "strategy", "version", "user", "username", "login", "email", "host", "port",
        "domain", "realm", "scope", "scopes", "audience", "issuer", "algorithm", "alg",
        "lifetime", "location", "store", "cache", "table", "column", "key", "keys", "index",
        "param", "option", "options", "mount", "ref", "reset", "changed", "manager",
        "service", "client", "source", "storage", "test",
        "tests", "view", "views", "form", "serializer", "url_name", "template", "input",
        "callback", "hook", "list", "map", "dict", "set", "getter", "setter", "loader",
        "reader", "writer", "parser", "rule", "rules", "signature", "text",
        "context", "config", "settings", "schema", "spec", "doc", "docs", "description",
    }
)  # fmt: skip
"""A name ending in one of these is about a secret, not one (`token_url`, `password_field`,
`secret_name`, `AUTH_USER_MODEL`)."""

ASSIGNMENT = re.compile(
    r"""(?P<name>[A-Za-z_][\w.-]*)["']?\]?(?:\s*:\s*&?(?:'\w+\s+)?[\w.]+(?:<[\w\s,]*>|\[\])?(?=\s*=))?
    \s*(?P<sep>:=|=>|\?=|=|:|,)[ \t]*
    (?:(?P<quote>["'`])(?P<bearer>(?:bearer|basic|token)\s+)?(?P<quoted>[^"'`\n]{3,}?)(?P=quote)
      |(?:(?:bearer|basic|token)[ \t]+)?
       (?P<plain>[^\s"'`,;#()\[\]{}<>=][^\s"'`,;#()\[\]{}<>=]{2,}={0,2}))""",
    re.VERBOSE | re.IGNORECASE,
)
URL_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.-]{1,30}://[^\s:/@'\"`]*:(?P<password>[^\s@/'\"`]+)@")
HEADER_CREDENTIAL = re.compile(
    r"\b(?:bearer|basic)\s+(?P<value>[A-Za-z0-9._~+/=-]{12,})", re.IGNORECASE
)
QUOTED_LITERAL = re.compile(r"""(["'`])(?P<value>[A-Za-z0-9+/=_.~-]{20,})\1""")
KEY_BLOCK_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
KEY_BLOCK_END = re.compile(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
WORD_SPLIT = re.compile(r"[_.\-\s]+")
REFERENCE = re.compile(
    r"""^(?:\$|%\(|%[A-Za-z_]|\{\{|\{[A-Za-z_]*\}$|<[^>]*>$|!|&|\*|@|os\.|env\b|process\.env|
    getenv|settings\.|self\.|config\.|import\b|require\b|true$|false$|null$|none$|nil$|
    yes$|no$|on$|off$|undefined$|str$|string$|int$|bool$|bytes$|optional|any$|required$)""",
    re.VERBOSE | re.IGNORECASE,
)
"""A value that refers to a secret kept elsewhere, or is not a value at all."""
PLAIN_IS_LITERAL = frozenset(
    {"ini", "cfg", "conf", "properties", "toml", "yaml", "yml", "env", "sh", "bash", "zsh",
     "tfvars", "hcl", "tf", "dockerfile", "npmrc", "pypirc", "netrc",
     "xml", "plist", "j2", "tpl", "example", "sample", "dist", "cnf", "service", "mk", ""}
)  # fmt: skip
"""Syntaxes where an unquoted value after `name =` or `name:` is a literal, not code."""
PEM_BODY = re.compile(r"""^[\s"'+]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: .*)(?:\\n)?["'+,;\s]*$""")
"""A line a private-key block may hold: base64, or a header such as `Proc-Type: 4,ENCRYPTED`."""


def name_means_secret(name: str) -> bool:
    """Whether an identifier names a secret: `STRIPE_KEY`? no; `stripe_secret_key`,
    `dbPassword`, `X-Api-Key`, `auth_token` yes; `token_url`, `secret_name` no."""
    words = [w for w in WORD_SPLIT.split(CAMEL.sub("_", name).lower()) if w]
    if words and words[0] in COUNTING:
        return False  # `max_tokens`, `num_keys`: a number of them
    if len(words) >= 2 and words[-1] == "key" and any(w in SECRET_WORDS for w in words):
        return True  # `auth_header_key`, `token_key`
    if not words or (words[-1] in NOT_SECRET_ENDS and not _pair_at_end(words)):
        return False
    if words[-1] == "pass" or any(
        word in SECRET_WORDS or word.endswith(SECRET_ENDINGS) for word in words
    ):
        return True  # "pass" only at the end: `db_pass`, not `pass_repo`
    return _pair_at_end(words) or any(
        a in KEY_PAIRS and b in ("key", "secret") for a, b in itertools.pairwise(words)
    )


def _pair_at_end(words: list[str]) -> bool:
    return len(words) >= 2 and words[-1] == "key" and words[-2] in KEY_PAIRS


USER_PASSWORD = re.compile(r"[\w.@-]+:[^\s:/]{6,}")
"""`user:password`, as curl's `-u` and basic auth take it."""
HEADER_NAME = re.compile(r"[A-Z][a-z]+(?:-[A-Z][a-z]+)*|X(?:-[A-Z][A-Za-z]+)+")


def _prose(value: str) -> bool:
    """Whether a quoted value with spaces reads as a sentence: low entropy, or five words
    or more of letters (a passphrase of fewer words is still masked)."""
    words = value.split()
    return shannon_entropy(value) < 3.5 or (
        len(words) >= 5 and all(word.strip(".,:;!?()'").isalpha() for word in words)
    )


def _literal_in_code(value: str) -> bool:
    """Whether an unquoted value in code is a literal (in a URL's query, a connection
    string, a comment), not an expression: long, letters and digits, varied."""
    return (
        len(value) >= 8
        and re.search(r"[A-Za-z]", value) is not None
        and re.search(r"\d", value) is not None
        and re.fullmatch(r"[A-Za-z_][\w.]*(?:\(.*)?", value) is None
        and shannon_entropy(value) > 3
    )


CREDENTIAL_HINT = re.compile(r"pass|pwd|secret|token|auth|cred|dsn")
"""Names a `user:password` value is a credential under; a bare `key` is too often a
cache or dictionary key (`_SCHEMA_KEY = "meta:schema"`)."""
NAME_HINT = re.compile(r"pass|pwd|secret|token|key|auth|cred|dsn|salt|pepper")
"""A line without one of these has no secret's name (a cheap look before ASSIGNMENT)."""
LINE_HINT = re.compile(
    r"(?:pass|pwd|secret|token|key|auth|cred|dsn|salt|pepper)[\w.-]*[\"'\]]{0,2}\s*"
    r"(?::=|=>|\?=|=|:|,)|bearer|basic|://"
)
LITERAL_HINT = re.compile(rb"[\"'`][a-z0-9+/=_.~-]{20}")
"""Lower-cased text without a secret-like name before a separator, a credential word or
`://`, or a quote opening a long literal, has no generic finding: C-speed passes over a
whole file pick the lines worth reading (the literal apart: its counted repetition would
swell the words' RE2 automaton)."""


def keyed_values(line: str, syntax: str) -> Iterator[Finding]:
    """Values assigned to names that mean a secret, quoted anywhere, unquoted where the
    syntax makes them literals (`syntax` is the file's extension, lower case)."""
    if NAME_HINT.search(line.lower()) is None:
        return
    position = 0
    while (match := ASSIGNMENT.search(line, position)) is not None:
        position = match.end("name")  # a value may hold the next name: `?user=a&password=b`
        group = "quoted" if match["quoted"] is not None else "plain"
        value = match[group]
        if match["sep"] == "," and not (match["bearer"] or _random_looking(value)):
            continue  # arguments or a list, not a pair: `f("password", widget)`, `["Auth", ...]`
        if not name_means_secret(match["name"]) and not (
            USER_PASSWORD.fullmatch(value) and CREDENTIAL_HINT.search(match["name"].lower())
        ):
            continue
        if REFERENCE.match(value) or value.strip() != value or len(value) < 4:
            continue
        if group == "plain" and syntax not in PLAIN_IS_LITERAL and not _literal_in_code(value):
            continue  # an expression: `MAX_TOKENS = 10000`, `token = 1*tchar`, `pw = get()`
        if group == "quoted" and " " in value and _prose(value):
            continue  # a sentence: "Enter your password", "its name marks a file of credentials"
        if _wordy(value) and not (len(value) >= 8 and _names_password(match["name"])):
            continue  # words or a dotted path: `auth = "django.auth"`, "sync-auth", "bearer"
        if value.lower() in PLACEHOLDERS:
            continue
        if HEADER_NAME.fullmatch(value):
            continue  # `AUTH_HEADER = "Authorization"`, "X-Api-Key"
        position = match.end(group)
        yield Finding(match.start(group), match.end(group), "keyed-value")


def _wordy(value: str) -> bool:
    """Letters only, maybe joined by `.`, `_` or `-`: a word, a name, a dotted path."""
    return re.fullmatch(r"[A-Za-z]+(?:[._-][A-Za-z]+)*", value) is not None


def _names_password(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in ("passw", "pwd", "passphrase"))


def _random_looking(value: str) -> bool:
    """Long, varied, token characters, and digits among letters or both cases."""
    mixed = bool(re.search(r"\d", value)) or value.lower() != value != value.upper()
    return (
        len(value) >= 16
        and shannon_entropy(value) > 3.5
        and re.fullmatch(r"[\w+/=.~-]+", value) is not None
        and mixed
        and not _wordy(value.rstrip("="))
    )


PLACEHOLDERS = frozenset(
    {"password", "passwd", "pass", "secret", "changeme", "xxxx", "xxxxxx", "****", "***",
     "none", "null", "redacted", "[secure]", "example", "dummy", "test", "token"}
)  # fmt: skip
"""Values that stand for a secret in docs and tests, not one."""


def url_passwords(line: str) -> Iterator[Finding]:
    for match in URL_PASSWORD.finditer(line):
        password = match["password"]
        if REFERENCE.match(password) or password.startswith("{") or len(password) < 4:
            continue
        if password.lower() in PLACEHOLDERS or len(set(password)) == 1:
            continue
        yield Finding(match.start("password"), match.end("password"), "url-password")


def header_credentials(line: str) -> Iterator[Finding]:
    for match in HEADER_CREDENTIAL.finditer(line):
        value = match["value"]
        if _wordy(value.rstrip(".,;:")) or REFERENCE.match(value) or shannon_entropy(value) <= 3:
            continue  # prose: "basic authentication", "bearer tokens"
        yield Finding(match.start("value"), match.end("value"), "auth-header")


def high_entropy_literals(line: str) -> Iterator[Finding]:
    """Quoted literals that look random: base64-like, with upper and lower case and digits.
    Hex alone is left to named values and gitleaks: unnamed, it is mostly digests."""
    if '"' not in line and "'" not in line and "`" not in line:
        return
    for match in QUOTED_LITERAL.finditer(line):
        value = match["value"]
        mixed = (
            re.search(r"[a-z]", value) and re.search(r"[A-Z]", value) and re.search(r"\d", value)
        )
        if not mixed or shannon_entropy(value) <= 4.2 or re.search(r"[./]\w+[./]", value):
            continue
        if ALPHABET_RUN.search(value) or DOTTED_NAME.fullmatch(value):
            continue  # an alphabet ("ABC...xyz0123"), a dotted name ("mod.Class")
        yield Finding(match.start("value"), match.end("value"), "high-entropy-base64")


ALPHABET_RUN = re.compile(r"abcdef|ABCDEF|012345|123456|234567|klmnop|KLMNOP|uvwxyz|UVWXYZ")
DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def line_findings(line: str, syntax: str) -> list[Finding]:
    """Every generic finding of one line."""
    found = list(keyed_values(line, syntax))
    if "://" in line:
        found.extend(url_passwords(line))
    lowered = line.lower()
    if "bearer" in lowered or "basic" in lowered:
        found.extend(header_credentials(line))
    found.extend(high_entropy_literals(line))
    return found


def key_block_lines(text: str) -> dict[int, tuple[int, int]]:
    """Line number -> the span to mask in it, for the lines of private-key blocks: the
    body lines whole and what follows a BEGIN marker on its line (a key pasted into a
    string with `\\n` escapes), found from the markers so that a window starting below a
    BEGIN line still masks the body."""
    if "PRIVATE KEY" not in text:
        return {}
    masked: dict[int, tuple[int, int]] = {}
    lines = text.split("\n")
    inside = False
    for number, line in enumerate(lines):
        begin = KEY_BLOCK_BEGIN.search(line)
        if begin is not None:
            end = KEY_BLOCK_END.search(line, begin.end())
            stop = end.start() if end is not None else len(line.rstrip())
            if stop > begin.end() and re.search(r"[A-Za-z0-9+/=]{16,}", line[begin.end() : stop]):
                masked[number] = (begin.end(), stop)
            inside = end is None
            continue
        if inside:
            end = KEY_BLOCK_END.search(line)
            if end is None and line.strip() and PEM_BODY.match(line) is None:
                inside = False  # code that names the marker, not a key: `startswith("-----BEGIN")`
                continue
            stop = end.start() if end is not None else len(line)
            content = line[:stop]
            first = len(content) - len(content.lstrip())
            last = len(content.rstrip())
            if last > first:
                masked[number] = (first, last)
            inside = end is None
    return masked
