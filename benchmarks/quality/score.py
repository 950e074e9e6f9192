#!/usr/bin/env python3
"""Score completion results of the repository-level benchmark: one row per strategy and model.

    python benchmarks/quality/score.py results.jsonl [more.jsonl ...] [--by-package] [--paired]

Each input line is one answered task, as run_baselines.py and benchmarks/quality/repo_eval.py write
it: at least `task_id`, `package`, `strategy`, `prediction` and `groundtruth` (`model` is
optional). Prediction and ground truth are compared after `str.strip()`:

- EM     the two strings are equal;
- ES     edit similarity, 100 * (1 - levenshtein / max(len)), 100 when both are empty;
- ID-EM  the ordered lists of identifiers are equal (strings, comments and keywords removed);
- ID-F1  F1 of the identifier multisets (1 when both are empty).

Every value is a per-task percentage averaged over the group's tasks. `--paired` keeps only
the tasks that every strategy in the input answered, so that rows compare the same tasks.
The printed table is the layout docs/results/*.txt hold. Standard library only, so that it
runs on the GPU machine without the project installed.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

METRICS = ("EM", "ES", "ID-EM", "ID-F1")
# Rows of one package and model come in this order; other strategy names sort after them.
STRATEGY_ORDER = {"in-file": 0, "bm25": 1, "oracle": 2}

# A comment, or a string literal with its prefix letters (so that the `f` of f"x" is not
# counted as an identifier). Backreference to the opening quote; one line, so no triple
# quote handling is needed beyond what this already does.
_STRING_OR_COMMENT = re.compile(
    r"#.*|(?P<prefix>[rbuf]*)(?P<q>['\"])(?:\\.|(?!(?P=q)).)*(?P=q)", re.I
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Record = dict[str, Any]
GroupKey = tuple[str, str, str]  # (strategy, model, package or "")


def levenshtein(a: str, b: str) -> int:
    """Character edit distance (insert, delete, substitute all cost 1)."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]


def edit_similarity(a: str, b: str) -> float:
    """100 for equal strings, 0 when nothing is shared, scaled by the longer string."""
    if not a and not b:
        return 100.0
    return 100.0 * (1 - levenshtein(a, b) / max(len(a), len(b)))


def identifiers(code: str) -> list[str]:
    """The names in one line of code, in order, without keywords, strings and comments."""
    code = _STRING_OR_COMMENT.sub(" ", code)
    return [word for word in _WORD.findall(code) if not keyword.iskeyword(word)]


def identifier_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """F1 of two identifier multisets, in [0, 1]; 1 when both are empty."""
    common = sum((Counter(predicted) & Counter(gold)).values())
    if not predicted and not gold:
        return 1.0
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def score_record(record: Record) -> dict[str, float]:
    """The four metrics of one answered task, each in percent."""
    predicted, gold = record["prediction"].strip(), record["groundtruth"].strip()
    predicted_ids, gold_ids = identifiers(predicted), identifiers(gold)
    return {
        "EM": 100.0 * (predicted == gold),
        "ES": edit_similarity(predicted, gold),
        "ID-EM": 100.0 * (predicted_ids == gold_ids),
        "ID-F1": 100.0 * identifier_f1(predicted_ids, gold_ids),
    }


def read_results(paths: Iterable[str | Path]) -> list[Record]:
    """All records of the given JSONL files, in file order (means depend on nothing else)."""
    records: list[Record] = []
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            records.extend(json.loads(line) for line in lines)
    return records


def paired(records: list[Record]) -> list[Record]:
    """Only the records of tasks that every strategy present has answered."""
    tasks_by_strategy: dict[str, set[str]] = defaultdict(set)
    for record in records:
        tasks_by_strategy[record["strategy"]].add(record["task_id"])
    if not tasks_by_strategy:
        return []
    common = set.intersection(*tasks_by_strategy.values())
    return [record for record in records if record["task_id"] in common]


def group_means(records: list[Record], by_package: bool = False) -> dict[GroupKey, dict[str, Any]]:
    """Mean metrics and task count per (strategy, model, package) group, in table order."""
    groups: dict[GroupKey, list[dict[str, float]]] = defaultdict(list)
    for record in records:
        key = (record["strategy"], record.get("model", ""), record["package"] if by_package else "")
        groups[key].append(score_record(record))

    def order(key: GroupKey) -> tuple[str, str, int, str]:
        strategy, model, package = key
        return (model, package, STRATEGY_ORDER.get(strategy, 9), strategy)

    table: dict[GroupKey, dict[str, Any]] = {}
    for key in sorted(groups, key=order):
        rows = groups[key]
        means: dict[str, Any] = {m: sum(row[m] for row in rows) / len(rows) for m in METRICS}
        means["n"] = len(rows)
        table[key] = means
    return table


def format_table(table: dict[GroupKey, dict[str, Any]]) -> list[str]:
    """The table as text lines: header, rule, one row per group (model cut to 28 chars)."""
    header = f"{'strategy':<10} {'model':<28} {'package':<14} {'n':>5} " + " ".join(
        f"{m:>6}" for m in METRICS
    )
    lines = [header, "-" * len(header)]
    for (strategy, model, package), means in table.items():
        values = " ".join(f"{means[m]:>6.1f}" for m in METRICS)
        lines.append(f"{strategy:<10} {model[-28:]:<28} {package:<14} {means['n']:>5} {values}")
    return lines


def score_files(
    paths: Iterable[str | Path], by_package: bool = False, pair: bool = False
) -> list[str]:
    """Read, optionally pair, and score result files: the lines `main` prints."""
    records = read_results(paths)
    if pair:
        records = paired(records)
    return format_table(group_means(records, by_package))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", nargs="+", help="JSONL files of answered tasks")
    parser.add_argument("--by-package", action="store_true", help="one row per package too")
    parser.add_argument(
        "--paired", action="store_true", help="only tasks that every strategy has a result for"
    )
    args = parser.parse_args(argv)
    print("\n".join(score_files(args.results, args.by_package, args.paired)))


if __name__ == "__main__":
    main()
