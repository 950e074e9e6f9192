"""The job service takes self-contained documents: every `$ref` points inside the document.

The validator and the generators follow a `$ref` wherever it points: `file:///etc/...`,
a path beside the document, a URL. On the user's own machine (`aiapi generate`) that is
their business; in the service it would read the server's files or fetch URLs for a
stranger (a `$ref` to a file came back in the validator's error message). So a job's
document is refused, at the line of each outside `$ref`, before anything resolves one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from server.aiapi.document import ContractDocument, ContractProblem, Pointer

MAX_REPORTED = 10


def outside_references(path: Path) -> list[ContractProblem]:
    """Each `$ref` of the document at `path` that does not start with '#', at its line.

    A document that does not parse is left to load_document, which says why."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return []
    found: list[tuple[Pointer, str]] = []
    _walk(data, (), found, set())
    if not found:
        return []
    document = ContractDocument(path=path, data=data if isinstance(data, dict) else {}, text=text)
    return [
        ContractProblem(
            f"$ref {target!r} points outside the document: the service takes self-contained "
            "documents only (bundle it first, for example with `redocly bundle`)",
            pointer,
            document.line_of(pointer),
        )
        for pointer, target in found[:MAX_REPORTED]
    ]


def _walk(node: Any, pointer: Pointer, found: list[tuple[Pointer, str]], seen: set[int]) -> None:
    """Depth first, each container once (YAML anchors share nodes, and may loop)."""
    if not isinstance(node, dict | list) or id(node) in seen or len(found) >= MAX_REPORTED:
        return
    seen.add(id(node))
    if isinstance(node, list):
        for index, item in enumerate(node):
            _walk(item, (*pointer, index), found, seen)
        return
    reference = node.get("$ref")
    if isinstance(reference, str) and not reference.startswith("#"):
        found.append(((*pointer, "$ref"), reference))
    for key, value in node.items():
        _walk(value, (*pointer, str(key)), found, seen)
