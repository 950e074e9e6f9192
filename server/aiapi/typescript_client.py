"""The TypeScript client: @hey-api/openapi-ts with its zod plugin, formatted by prettier.

openapi-ts (pinned in server/aiapi/node/package.json, installed into .tools/aiapi-node by
server/aiapi/install_tools.sh) writes the types, the zod schemas and a fetch SDK that
validates responses with them; nothing here is hand-templated but a header naming the
document, a package.json and a tsconfig.json.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.naming import comment_text
from server.aiapi.python_client import header
from server.aiapi.tools import GeneratorError, node_tool
from server.aiapi.typescript_react_query import (
    REACT_QUERY_PLUGIN,
    REACT_QUERY_RANGE,
    react_query_readme,
)

ZOD_RANGE = "^4.1.12"
# The media types the fetch client reads as a Blob: openapi-ts' list lacks font/ and model/,
# so it parsed jellyfin's font/* answer as JSON and threw
OPENAPI_TS_BINARY = "['application/', 'audio/', 'image/', 'video/']"
BINARY_MEDIA = "['application/', 'audio/', 'font/', 'image/', 'model/', 'video/']"

TSCONFIG = {
    "compilerOptions": {
        "target": "ES2022",
        "module": "ESNext",
        "moduleResolution": "Bundler",
        "lib": ["ES2022", "DOM", "DOM.Iterable"],
        "strict": True,
        "skipLibCheck": True,
        "noEmit": True,
        "isolatedModules": True,
    },
    "include": ["src/**/*.ts"],
}


def generate_typescript(
    document: ContractDocument, out: Path, timeout_s: float = 300, *, react_query: bool = False
) -> Path:
    """Write src/, package.json and tsconfig.json under `out`; return `out`. With
    `react_query`, also TanStack React Query options (server/aiapi/typescript_react_query.py)
    and a README that shows them."""
    openapi_ts = node_tool("openapi-ts")
    prettier = node_tool("prettier")
    out.mkdir(parents=True, exist_ok=True)
    source = out / "src"
    with tempfile.TemporaryDirectory(prefix="headstart-openapi-ts-") as scratch:
        config = Path(scratch) / "openapi-ts.config.mjs"
        source_document = document.path.resolve()
        patterns = _patterns(document.data, set())
        unusable = _unusable_patterns(patterns) if patterns else set()
        if (
            unusable
            or any(_js_pattern(p) != p for p in patterns)
            or _has_default_of_another_type(document.data)
            or _deep_refs(document.data)
            or _discriminators_for_zod(document.data) is not None
            or _has_uuid(document.data)
            or _has_bodiless_body(document.data)
            or _has_wildcard_media(document.data)
        ):
            # a copy beside nothing: external $refs of such a document would not resolve
            source_document = Path(scratch) / "document.json"
            copy = _rewrite_patterns(document.data, unusable)
            if _deep_refs(copy):
                copy = _inline_deep_refs(copy, copy, ())
            copy = _discriminators_for_zod(copy) or copy
            source_document.write_text(json.dumps(copy), encoding="utf-8")
        settings = {
            "input": str(source_document),
            "output": {"path": str(source.resolve())},
            "plugins": [
                "@hey-api/client-fetch",
                "@hey-api/typescript",
                # RFC 3339 date-times carry Z or an offset; zod's default takes Z alone
                # (Azure's automation answers "2017-03-26T01:13:43.267+01:00")
                {"name": "zod", "dates": {"offset": True}},
                # responses validated by zod; requests not: openapi-ts 0.95's fetch client
                # hands the request validator a Headers object, so every operation with a
                # required header parameter would fail before it is sent (Azure's If-Match)
                {"name": "@hey-api/sdk", "validator": {"request": False, "response": "zod"}},
                *([REACT_QUERY_PLUGIN] if react_query else []),
            ],
            "logs": {"file": False, "level": "silent"},
        }
        config.write_text(f"export default {json.dumps(settings)};\n", encoding="utf-8")
        env = {**os.environ, "NO_COLOR": "1", "CI": "1"}
        try:
            done = subprocess.run(
                [openapi_ts, "-f", str(config)],
                cwd=scratch,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=env,
            )
        except subprocess.TimeoutExpired as exc:
            raise GeneratorError("typescript", f"openapi-ts took over {timeout_s:.0f} s") from exc
        if done.returncode != 0 or not (source / "index.ts").exists():
            raise GeneratorError("typescript", "openapi-ts failed", done.stdout + done.stderr)
    top = f"// {header(document, 'A typed fetch client')}\n"
    for path in sorted(source.rglob("*.ts")):
        text = path.read_text(encoding="utf-8").replace(OPENAPI_TS_BINARY, BINARY_MEDIA)
        path.write_text(top + text, encoding="utf-8")
    package = {
        "name": _package_name(document),
        "version": "0.0.0",
        "private": True,
        "description": comment_text(header(document, "A typed fetch client")),
        "type": "module",
        "main": "src/index.ts",
        "dependencies": {"zod": ZOD_RANGE},
    }
    if react_query:
        package["dependencies"] = {REACT_QUERY_PLUGIN: REACT_QUERY_RANGE, "zod": ZOD_RANGE}
        readme = react_query_readme(str(package["name"]), document.title, out)
        (out / "README.md").write_text(readme, encoding="utf-8")
    (out / "package.json").write_text(json.dumps(package, indent=2) + "\n", encoding="utf-8")
    (out / "tsconfig.json").write_text(json.dumps(TSCONFIG, indent=2) + "\n", encoding="utf-8")
    formatted = subprocess.run(
        [prettier, "--write", "--log-level=warn", "--no-config", "--print-width=100", "."],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if formatted.returncode != 0:
        raise GeneratorError("typescript", "prettier failed", formatted.stdout + formatted.stderr)
    return out


# \u00XX, not only controls: openapi-ts writes any \u escape as the raw character, and
# AWS IAM's \u002F became a / that ended the literal, a \u002E would become a wildcard
_LATIN1_ESCAPE = re.compile(r"\\u00([0-9A-Fa-f]{2})")
_BRACED_HEX = re.compile(r"\\x\{([0-9A-Fa-f]{1,2})\}")


def _js_pattern(pattern: str) -> str:
    """A pattern as a JavaScript regex literal can carry it: `\\u0009` as `\\x09` (see
    _rewrite_patterns) and the PCRE/Java `\\x{60}` as `\\x60` (AWS location's RefererPattern:
    tsc rejects `\\x{` in a literal, and without the u flag JavaScript would read it as the
    letters x{60})."""
    pattern = _LATIN1_ESCAPE.sub(r"\\x\1", pattern)
    return _escape_slashes(_BRACED_HEX.sub(lambda m: "\\x" + m.group(1).zfill(2), pattern))


def _escape_slashes(pattern: str) -> str:
    """Each `/` not yet escaped, escaped: openapi-ts writes the pattern into a /literal/
    as it is, and AWS IAM's PathType `(/)|(/[!-~]+/)` ended the literal early (prettier:
    "Expression expected")."""
    out, escaped = [], False
    for char in pattern:
        if char == "/" and not escaped:
            out.append("\\/")
        else:
            out.append(char)
        escaped = char == "\\" and not escaped
    return "".join(out)


# Each pattern as openapi-ts writes it: the u flag when it has \p{...}; those JavaScript
# cannot compile (Java's \p{XDigit} or \p{Graph} in AWS's documents) are printed.
_CHECK_PATTERNS = """
const patterns = JSON.parse(require("fs").readFileSync(0, "utf8"));
const bad = patterns.filter((p) => {
  if (/\\\\x\\{/.test(p)) return true; // a braced hex escape: a literal rejects it
  try { new RegExp(p, /\\\\[pP]\\{/.test(p) ? "u" : ""); return false; } catch { return true; }
});
process.stdout.write(JSON.stringify(bad));
"""


def _patterns(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            found.add(node["pattern"])
        for value in node.values():
            _patterns(value, found)
    elif isinstance(node, list):
        for value in node:
            _patterns(value, found)
    return found


def _unusable_patterns(patterns: set[str]) -> set[str]:
    escaped = sorted(_js_pattern(p) for p in patterns)
    done = subprocess.run(
        ["node", "-e", _CHECK_PATTERNS],
        input=json.dumps(escaped),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise GeneratorError("typescript", "node could not check the patterns", done.stderr)
    return set(json.loads(done.stdout))


def _rewrite_patterns(node: Any, unusable: set[str]) -> Any:
    """Patterns as JavaScript reads them: `\\u0009` as `\\x09` (openapi-ts turns a \\u
    escape into the raw character inside its /regex/ literal, and a raw newline ends the
    literal), and those JavaScript cannot compile left out (the zod schema then checks
    the type and lengths only; the Python and Go clients do not check patterns either)."""
    if isinstance(node, dict):
        copy = {k: _rewrite_patterns(v, unusable) for k, v in node.items()}
        if isinstance(node.get("pattern"), str):
            pattern = _js_pattern(node["pattern"])
            if pattern in unusable:
                del copy["pattern"]
            else:
                copy["pattern"] = pattern
        if _default_of_another_type(node):
            del copy["default"]
        for method in ("get", "head"):  # see _has_bodiless_body
            if isinstance(copy.get(method), dict) and "requestBody" in copy[method]:
                copy[method] = {k: v for k, v in copy[method].items() if k != "requestBody"}
        content = copy.get("content")
        if isinstance(content, dict) and _wildcard_beside_concrete(content):
            copy["content"] = {k: v for k, v in content.items() if "*" not in str(k)}
        if node.get("format") == "uuid" and node.get("type") in ("string", None):
            copy["format"] = "guid"  # see _has_uuid
        return copy
    if isinstance(node, list):
        return [_rewrite_patterns(v, unusable) for v in node]
    return node


_SCHEMAS = "#/components/schemas/"


def _deep_refs(node: Any) -> bool:
    """Whether a `$ref` points inside a component schema (`#/components/schemas/Order/allOf/0`
    in codat.io's documents, a property of `address` in vtex.local's)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_SCHEMAS) and "/" in ref[len(_SCHEMAS) :]:
            return True
        return any(_deep_refs(v) for v in node.values())
    if isinstance(node, list):
        return any(_deep_refs(v) for v in node)
    return False


def _inline_deep_refs(node: Any, root: dict[str, Any], inlining: tuple[str, ...]) -> Any:
    """Such `$ref`s replaced by what they point at: openapi-ts 0.95 stops on them ("Symbol
    finalName has not been resolved yet"). A reference to itself is left as it was."""
    if isinstance(node, list):
        return [_inline_deep_refs(v, root, inlining) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if (
        isinstance(ref, str)
        and ref.startswith(_SCHEMAS)
        and "/" in ref[len(_SCHEMAS) :]
        and ref not in inlining
    ):
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            elif isinstance(target, dict) and part in target:
                target = target[part]
            else:
                return node  # unresolvable: openapi-ts says so itself
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        inlined = _inline_deep_refs(target, root, (*inlining, ref))
        return {**inlined, **siblings} if isinstance(inlined, dict) else inlined
    return {k: _inline_deep_refs(v, root, inlining) for k, v in node.items()}


def _discriminators_for_zod(data: dict[str, Any]) -> dict[str, Any] | None:
    """Discriminators as openapi-ts 0.95's zod plugin can read them; None when none needs
    a change. It gives each schema that extends a discriminated parent (allOf) a literal
    tag, the mapping's key or else the schema's name, so:

    - Azure's subschemas, tagged by `x-ms-discriminator-value` (servicefabric's
      ApplicationContainerInstanceExitedEvent is sent as "ApplicationContainerInstanceExited"),
      get the mapping the converted document lacks;
    - where a subschema is extended in turn (servicefabric: FabricEvent, ApplicationEvent,
      then each application event), the grandchild would need two different literals at
      once, and no answer could pass: the parent's discriminator is left out, and that
      family's zod schemas check the tag as the plain property it also is."""
    schemas = (data.get("components") or {}).get("schemas")
    if not isinstance(schemas, dict):
        return None
    children: dict[str, list[str]] = {}
    for name, schema in schemas.items():
        for part in (schema.get("allOf") if isinstance(schema, dict) else None) or []:
            ref = part.get("$ref") if isinstance(part, dict) else None
            if (
                isinstance(ref, str)
                and ref.startswith(_SCHEMAS)
                and "/" not in ref[len(_SCHEMAS) :]
            ):
                children.setdefault(ref[len(_SCHEMAS) :], []).append(name)
    changed: dict[str, Any] = {}
    for name, schema in schemas.items():
        discriminator = schema.get("discriminator") if isinstance(schema, dict) else None
        if not isinstance(discriminator, dict) or not children.get(name):
            continue
        if any(children.get(child) for child in children[name]):
            changed[name] = {k: v for k, v in schema.items() if k != "discriminator"}
        elif not discriminator.get("mapping") and any(
            isinstance(schemas[c], dict) and "x-ms-discriminator-value" in schemas[c]
            for c in children[name]
        ):
            mapping = {
                str(schemas[c].get("x-ms-discriminator-value", c)): _SCHEMAS + c
                for c in children[name]
                if isinstance(schemas[c], dict)
            }
            changed[name] = {**schema, "discriminator": {**discriminator, "mapping": mapping}}
    if not changed:
        return None
    components = dict(data["components"])
    components["schemas"] = {**schemas, **changed}
    return {**data, "components": components}


_JSON_TYPES: dict[str, Any] = {
    "boolean": bool, "string": str, "integer": int, "number": int | float,
    "array": list, "object": dict,
}  # fmt: skip


def _default_of_another_type(node: dict[str, Any]) -> bool:
    """A default the schema's own type rules out (GitHub AE's `is_alphanumeric`, a boolean
    defaulting to the string "true"): openapi-ts would write `z.boolean().default("true")`,
    which tsc rejects. Left out of the copy openapi-ts reads."""
    kind, default = node.get("type"), node.get("default")
    if not isinstance(kind, str) or kind not in _JSON_TYPES or "default" not in node:
        return False
    if default is None:
        return False  # null: nullable's business
    if isinstance(default, bool) and kind in ("integer", "number"):
        return True
    return not isinstance(default, _JSON_TYPES[kind])


def _wildcard_beside_concrete(content: dict[str, Any]) -> bool:
    return any("*" in str(k) for k in content) and any("*" not in str(k) for k in content)


def _has_wildcard_media(node: Any) -> bool:
    """Whether a content map lists a wildcard media type beside a concrete one: openapi-ts
    sends the first as the request's Content-Type, and jellyfin lists `application/*+json`
    before `application/json` (Prism read no body from it). The copy keeps the concrete
    ones."""
    if isinstance(node, dict):
        content = node.get("content")
        if isinstance(content, dict) and _wildcard_beside_concrete(content):
            return True
        return any(_has_wildcard_media(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_wildcard_media(v) for v in node)
    return False


def _has_bodiless_body(data: dict[str, Any]) -> bool:
    """Whether a GET or HEAD operation declares a request body: OpenAPI says to ignore it,
    and fetch refuses to send one (trakt.tv's progress operations: the SDK threw a
    TypeError on every call), so openapi-ts reads the document without it."""
    return any(
        isinstance(item, dict)
        and any(isinstance(item.get(m), dict) and "requestBody" in item[m] for m in ("get", "head"))
        for item in (data.get("paths") or {}).values()
    )


def _has_uuid(node: Any) -> bool:
    """Whether a schema says `format: uuid`: zod's uuid() takes RFC 9562's versions 1 to 8
    only, where the format is any 8-4-4-4-12 hex text (Azure's servicefabric answers
    00000000-0000-0000-0000-000000000010); such strings are checked as zod's guid()."""
    if isinstance(node, dict):
        return node.get("format") == "uuid" or any(_has_uuid(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_uuid(v) for v in node)
    return False


def _has_default_of_another_type(node: Any) -> bool:
    if isinstance(node, dict):
        return _default_of_another_type(node) or any(
            _has_default_of_another_type(v) for v in node.values()
        )
    if isinstance(node, list):
        return any(_has_default_of_another_type(v) for v in node)
    return False


def _package_name(document: ContractDocument) -> str:
    from server.aiapi.naming import words

    return "-".join(w.lower() for w in words(document.title))[:60].strip("-") or "api-client"
