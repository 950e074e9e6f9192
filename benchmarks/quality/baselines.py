"""Prompts of the three reference strategies, in Qwen2.5-Coder's FIM format.

    in-file  <|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>
    bm25     repository-level prompt with the best BM25 10-line chunks of the repo's other files
    oracle   repository-level prompt with the definitions the task's line needs

They bracket what Headstart's own context should reach: no context, naive retrieval, and
the true definitions (about an upper bound for retrieval). Budgets count 4 characters a
token. Standard library only: run_baselines.py imports it on the GPU machine.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

STRATEGIES = ("in-file", "bm25", "oracle")
CHARS_PER_TOKEN = 4
PREFIX_TOKENS, SUFFIX_TOKENS, RETRIEVED_TOKENS = 1500, 500, 1000
CHUNK_LINES = 10  # BM25 documents: non-overlapping windows of this many lines
QUERY_LINES = 10  # the BM25 query: the last lines of the prefix
TOP_K = 5
ORACLE_MAX_LINES = 40  # of each definition
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Task = dict[str, Any]
Snippet = tuple[str, str]  # (path in the repository, text)


def trim_prefix(text: str, tokens: int = PREFIX_TOKENS) -> str:
    """The last `tokens` of text, from the start of a line."""
    limit = tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    text = text[-limit:]
    return text[text.find("\n") + 1 :]


def trim_suffix(text: str, tokens: int = SUFFIX_TOKENS) -> str:
    """The first `tokens` of text, up to the end of a line (all of it if it has no newline)."""
    limit = tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    text = text[:limit]
    return text[: text.rfind("\n") + 1] or text


def fim_prompt(task: Task) -> str:
    """The in-file prompt: the file around the cursor only."""
    prefix, suffix = trim_prefix(task["prefix"]), trim_suffix(task["suffix"])
    return f"<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"


def repo_prompt(task: Task, snippets: Sequence[Snippet]) -> str:
    """Qwen2.5-Coder's repository-level prompt; snippets in order, the most relevant last."""
    parts = [f"<|repo_name|>{task['package']}\n"]
    parts += [f"<|file_sep|>{path}\n{text}\n" for path, text in snippets]
    parts.append(f"<|file_sep|>{task['file']}\n{fim_prompt(task)}")
    return "".join(parts)


def words(text: str) -> list[str]:
    """BM25 terms: identifiers, lower-cased."""
    return [word.lower() for word in _WORD.findall(text)]


class BM25:
    """Okapi BM25 (k1 1.5, b 0.75) over documents given as term lists."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75):
        self.k1 = k1
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)  # term -> (doc, tf)
        lengths = [len(document) for document in documents]
        average = sum(lengths) / max(len(documents), 1) or 1
        for index, document in enumerate(documents):
            for term, frequency in Counter(document).items():
                self.postings[term].append((index, frequency))
        self.norm = [k1 * (1 - b + b * length / average) for length in lengths]
        n = len(documents)
        self.idf = {
            term: math.log(1 + (n - len(hits) + 0.5) / (len(hits) + 0.5))
            for term, hits in self.postings.items()
        }

    def top(self, query: Sequence[str], k: int) -> list[int]:
        """Indexes of the k best documents, ties broken by index."""
        scores: dict[int, float] = defaultdict(float)
        for term in set(query):
            for index, frequency in self.postings.get(term, ()):
                scores[index] += (
                    self.idf[term] * frequency * (self.k1 + 1) / (frequency + self.norm[index])
                )
        return sorted(scores, key=lambda index: (-scores[index], index))[:k]


class RepoIndex:
    """BM25 over the non-empty CHUNK_LINES-line chunks of every .py file of one repository."""

    def __init__(self, repo_root: str | Path) -> None:
        root = Path(repo_root)
        self.chunks: list[tuple[str, str, str]] = []  # (path, whole file, chunk)
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            lines = text.split("\n")
            for start in range(0, len(lines), CHUNK_LINES):
                chunk = "\n".join(lines[start : start + CHUNK_LINES])
                if chunk.strip():
                    self.chunks.append((str(path.relative_to(root)), text, chunk))
        self.bm25 = BM25([words(chunk) for _, _, chunk in self.chunks])

    def retrieve(self, task: Task) -> list[Snippet]:
        """The best chunks of other files (not the task's, nor a copy of it) within the
        retrieval budget, best last (nearest the cursor)."""
        query = words("\n".join(task["prefix"].split("\n")[-QUERY_LINES:]))
        own_text = task["prefix"] + task["groundtruth"] + task["suffix"]
        hits = [
            index
            for index in self.bm25.top(query, TOP_K + 20)
            if self.chunks[index][0] != task["file"] and self.chunks[index][1] != own_text
        ][:TOP_K]
        chosen: list[Snippet] = []
        used = 0
        for index in hits:
            path, _, chunk = self.chunks[index]
            used += len(chunk) + len(path) + 2
            if used > RETRIEVED_TOKENS * CHARS_PER_TOKEN:
                break
            chosen.append((path, chunk))
        return chosen[::-1]


def oracle_snippets(task: Task, repo_root: str | Path) -> list[Snippet]:
    """The definitions of the task's cross-file symbols (each once, at most ORACLE_MAX_LINES
    lines), the one at the cursor last."""
    snippets: list[Snippet] = []
    seen: set[tuple[str, int]] = set()
    for symbol in task["cross_file_symbols"]:
        first, last = symbol["span"]
        if (symbol["defined_in"], first) in seen:
            continue
        seen.add((symbol["defined_in"], first))
        path = Path(repo_root) / symbol["defined_in"]
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        end = min(last + 1, first + ORACLE_MAX_LINES)
        snippets.append((symbol["defined_in"], "\n".join(lines[first:end])))
    return snippets[::-1]


class PromptBuilder:
    """Prompts for tasks whose repo_dir is relative to `root` (make_tasks.py's --out)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._indexes: dict[str, RepoIndex] = {}

    def build(self, task: Task, strategy: str) -> str:
        repo_root = self.root / task["repo_dir"]
        if strategy == "in-file":
            return fim_prompt(task)
        if strategy == "bm25":
            if task["repo_dir"] not in self._indexes:
                self._indexes[task["repo_dir"]] = RepoIndex(repo_root)
            return repo_prompt(task, self._indexes[task["repo_dir"]].retrieve(task))
        if strategy == "oracle":
            return repo_prompt(task, oracle_snippets(task, repo_root))
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {STRATEGIES}")
