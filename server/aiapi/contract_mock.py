"""The mock that plays the contract: Prism (from npm) on a copy of the document made
servable (external refs, headers OpenAPI says to ignore, bodies of GET and HEAD), started
and restarted on a free port."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.operations import schema_types
from server.aiapi.tools import GeneratorError, ToolMissing, tools_folder

PRISM_SEED = "38"

# The mock


def prism_command() -> str:
    path = tools_folder() / "aiapi-mock" / "node_modules" / ".bin" / "prism"
    if not path.exists():
        raise ToolMissing("contract", "prism is not installed: run server/aiapi/install_tools.sh")
    return str(path)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# Content-Type too: "If a response header is defined with the name "Content-Type", it
# SHALL be ignored" (OpenAPI 3.0.3, Response Object); Prism sent azure batch's `string` as
# one and failed on it (500, "Cannot find serializer for string")
TRANSPORT_HEADERS = frozenset(
    {"content-encoding", "transfer-encoding", "content-length", "connection", "content-type"}
)


Repair = tuple[str, str, str, str]  # (route, method, response code, media type)


def mocked_document(
    document: ContractDocument, scratch: Path, repairs: dict[Repair, Any] | None = None
) -> Path:
    """The document Prism plays: the document itself, or a copy of it

    - without the response headers that describe the transport rather than the API
      (notion.com's, recorded from real traffic, declare `Content-Encoding: gzip`, which
      Prism would send over a plain body, so no client could read an answer);
    - without header parameters named Accept, Content-Type or Authorization, and request
      bodies of GET and HEAD operations, which OpenAPI says to ignore and Prism would demand;
    - with its paths ordered from the least literal to the most where Prism would route a
      request to a less literal templated path (of two it matches equally well, Prism takes
      the one declared last: nrel's /v1/{id}.{output_format} took /v1/pocs.json, 422);
    - with list fields of form bodies given the encoding OpenAPI takes for them when
      none is declared (form style, exploded: repeated fields), which Prism 5.14 reads
      only when declared (circuitsandbox's participants, elevenlabs' files: 422);
    - answering with the given examples (built from the schema) where Prism's own answer
      breaks the document's schema."""
    found = False

    def walk(node: Any, key: str = "") -> Any:
        nonlocal found
        if isinstance(node, dict):
            if key == "headers":
                kept = {k: v for k, v in node.items() if str(k).lower() not in TRANSPORT_HEADERS}
                found = found or len(kept) != len(node)
                node = kept
            return {k: walk(v, str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    if external_refs(document.data):  # a copy elsewhere would lose them
        return document.path.resolve()
    copy = walk(document.data)
    routes = list(copy.get("paths") or {})
    if _shadowed(routes):
        copy["paths"] = {route: copy["paths"][route] for route in sorted(routes, key=_literal)}
        found = True
    for item in (copy.get("paths") or {}).values():
        for method in BODILESS_METHODS:
            if isinstance(item.get(method), dict) and "requestBody" in item[method]:
                item[method] = {k: v for k, v in item[method].items() if k != "requestBody"}
                found = True
        for operation in item.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            encoded = _form_lists_exploded(document, body) if body is not None else None
            if encoded is not None:
                operation["requestBody"] = walk(encoded)
                found = True
        for holder in [item, *(v for v in item.values() if isinstance(v, dict))]:
            parameters = holder.get("parameters") if isinstance(holder, dict) else None
            if isinstance(parameters, list):
                kept = [p for p in parameters if not _ignored_header(document, p)]
                found = found or len(kept) != len(parameters)
                holder["parameters"] = kept
    for (route, method, code, media_type), example in (repairs or {}).items():
        try:
            operation = copy["paths"][route][method]
            response = walk(document.resolve(operation["responses"][code]))
            media = dict(response["content"][media_type])
        except (KeyError, TypeError):  # a $ref'd path item: left as it is
            continue
        media.pop("examples", None)
        media["example"] = example
        content = {**response["content"], media_type: media}
        operation["responses"][code] = {**response, "content": content}
        found = True
    if not found:
        return document.path.resolve()
    target = scratch / f"mocked-document-{len(repairs or {})}.json"
    target.write_text(json.dumps(copy), encoding="utf-8")
    return target


TEMPLATE = re.compile(r"\{[^}]*\}")


def _literal(route: str) -> int:
    """How much of the route is literal text, not templates."""
    return len(TEMPLATE.sub("", route))


def _shadowed(routes: list[str]) -> bool:
    """Whether a templated route is declared before a less literal one that matches its
    requests, segment by segment as Prism's router does (a template matches any text)."""
    by_length: dict[int, list[str]] = {}
    for route in routes:
        if "{" in route:
            by_length.setdefault(route.count("/"), []).append(route)
    for group in by_length.values():
        for i, earlier in enumerate(group):
            sample = TEMPLATE.sub("1", earlier).split("/")
            for later in group[i + 1 :]:
                if _literal(later) < _literal(earlier) and all(
                    _segment_matches(part, text)
                    for part, text in zip(later.split("/"), sample, strict=True)
                ):
                    return True
    return False


def _segment_matches(part: str, text: str) -> bool:
    if "{" not in part:
        return part == text
    pieces = re.split(r"(\{[^}]*\})", part)
    pattern = "".join("(.*)" if TEMPLATE.fullmatch(p) else re.escape(p) for p in pieces)
    return re.search(pattern, text) is not None


FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _form_lists_exploded(document: ContractDocument, body: Any) -> dict[str, Any] | None:
    """The request body with an explicit form-style, exploded encoding for each list field
    of a form that declares none (None where nothing changes): OpenAPI's default, and the
    only way a client sends a list as form fields, which Prism refuses unless declared."""
    resolved = document.resolve(body)
    content = resolved.get("content") if isinstance(resolved, dict) else None
    if not isinstance(content, dict):
        return None
    changed = dict(content)
    for media_type, media in content.items():
        if not isinstance(media, dict) or str(media_type).split(";")[0].strip().lower() not in (
            FORM_MEDIA_TYPES
        ):
            continue
        schema = document.resolve(media.get("schema"))
        properties = schema.get("properties") if isinstance(schema, dict) else None
        encoding = dict(media.get("encoding") or {})
        lists = [
            name
            for name, field in (properties or {}).items()
            if name not in encoding
            and isinstance(document.resolve(field), dict)
            and schema_types(document.resolve(field))[0] == "array"
        ]
        if lists:
            exploded = {"style": "form", "explode": True, "allowReserved": True}
            changed[media_type] = {
                **media,
                "encoding": {**encoding, **dict.fromkeys(lists, exploded)},
            }
    return {**resolved, "content": changed} if changed != content else None


# "requestBody is only supported in HTTP methods where the HTTP 1.1 specification has
# explicitly defined semantics for request bodies ... SHALL be ignored by consumers"
# (OpenAPI 3.0.3); fetch refuses to send one with GET or HEAD (trakt.tv declares one)
BODILESS_METHODS = ("get", "head")

# "If in is header and the name is Accept, Content-Type or Authorization, the parameter
# definition SHALL be ignored" (OpenAPI 3.0.3, Parameter Object); Prism requires them
IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})


def _ignored_header(document: ContractDocument, parameter: Any) -> bool:
    """vtex.local's documents declare a required Content-Type header on GETs, which Prism
    then demands, and which a fetch client drops from a request without a body."""
    resolved = document.resolve(parameter)
    return (
        isinstance(resolved, dict)
        and resolved.get("in") == "header"
        and str(resolved.get("name", "")).lower() in IGNORED_HEADERS
    )


def external_refs(node: Any) -> list[str]:
    """The `$ref`s that point outside the document (a copy elsewhere would lose them)."""
    found: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            found.append(ref)
        for value in node.values():
            found.extend(external_refs(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(external_refs(value))
    return found


class PrismMock:
    """Prism mocking the document on a free port; restartable when it crashes."""

    def __init__(
        self, document: ContractDocument, scratch: Path, repairs: dict[Repair, Any] | None = None
    ) -> None:
        self.document = document
        self.repairs = dict(repairs or {})
        self.log_path = scratch / f"prism-{len(self.repairs)}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.restarts = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = free_port()
        mocked = mocked_document(self.document, self.log_path.parent, self.repairs)
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [prism_command(), "mock", "--host", "127.0.0.1", "--port", str(self.port),
                 "--errors", "false", "--seed", PRISM_SEED, str(mocked)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self._wait_for_port(timeout_s=120)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def restart(self) -> None:
        self.stop()
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):  # it may have exited on its own
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def request_logs(self, since: int) -> list[str]:
        """The log of each request received after byte `since`, in order."""
        with self.log_path.open("rb") as log:
            log.seek(since)
            text = log.read().decode("utf-8", "replace")
        chunks = re.split(r"\n(?=.*\[HTTP SERVER\].*Request received)", "\n" + text)
        return [c for c in chunks if "Request received" in c]

    def _wait_for_port(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise GeneratorError("contract", "prism exited", self.log_path.read_text()[-3000:])
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.2)
        raise GeneratorError("contract", f"prism did not listen within {timeout_s:.0f} s")
