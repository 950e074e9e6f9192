"""Semantic tokens of a document: the classifier for its language, and its last result.

- `classify_any` dispatches by language to the classifiers beside this one: `python`,
  and `typescript` (TypeScript/TSX/JavaScript), `go`, `rust` and `java` on the shared
  `walker`; it returns None for a language without tokens.
- `DocumentTokens` keeps each document's last result, so `full/delta` answers against
  the previous result id; the trees come from `server.completion.trees` (incremental
  re-parses).

What the project says about imported names is resolved before, in `project`; the result
is encoded for the client after, in `encoding` with a `legend`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from tree_sitter import Node

from server.completion.trees import DocumentTrees
from server.features.semantic_tokens import go as tokens_go
from server.features.semantic_tokens import java as tokens_java
from server.features.semantic_tokens import python as tokens_py
from server.features.semantic_tokens import rust as tokens_rust
from server.features.semantic_tokens import typescript as tokens_ts
from server.features.semantic_tokens.model import ProjectNames, Token

_CLASSIFIERS: Final[Mapping[str, Callable[[Node, ProjectNames], list[Token]]]] = {
    "python": tokens_py.classify,
    "typescript": tokens_ts.classify,
    "tsx": tokens_ts.classify,
    "javascript": tokens_ts.classify,
    "go": tokens_go.classify,
    "rust": tokens_rust.classify,
    "java": tokens_java.classify,
}
SUPPORTED_LANGUAGES: Final = frozenset(_CLASSIFIERS)


def classify_any(root: Node, language: str, project: ProjectNames) -> list[Token] | None:
    """The tokens of a tree of `language`, sorted by position; None for a language
    without a classifier."""
    classifier = _CLASSIFIERS.get(language)
    return classifier(root, project) if classifier is not None else None


# --- per-document state -------------------------------------------------------------------------


@dataclass(slots=True)
class Result:
    result_id: str
    data: list[int]


class DocumentTokens:
    """Each open document's last result, for `full/delta`; its trees come from
    `DocumentTrees` (incremental re-parses). `tokens` may run in a worker thread."""

    def __init__(self, trees: DocumentTrees) -> None:
        self.trees = trees
        self._results: dict[str, Result] = {}
        self._counter = itertools.count(1)

    def tokens(
        self, uri: str, text: str, language: str, project: ProjectNames
    ) -> list[Token] | None:
        """The tokens of `text`; None for a language without support."""
        if language not in SUPPORTED_LANGUAGES:
            return None
        tree = self.trees.tree(uri, text, language)
        return classify_any(tree.root_node, language, project) if tree is not None else None

    def remember(self, uri: str, data: list[int]) -> Result:
        """Keep `data` as the document's latest result, under a new id."""
        result = Result(str(next(self._counter)), data)
        self._results[uri] = result
        return result

    def previous(self, uri: str, result_id: str) -> Result | None:
        result = self._results.get(uri)
        return result if result is not None and result.result_id == result_id else None

    def forget(self, uri: str) -> None:
        self._results.pop(uri, None)

    def __len__(self) -> int:
        """Documents with a result kept."""
        return len(self._results)
