#!/usr/bin/env python3
"""Build completion tasks at the call sites of an API, for Headstart with and without the
API's OpenAPI document in the prompt (completion.contractShare; docs/aiapi.md).

    python benchmarks/quality/contract_tasks.py --document DOC --package NAME==VERSION \\
        [--package ...] --out .gpu/eval/contract [--per-package 40] [--seed 0] [--cache DIR]

For each package (public code someone else wrote against the API, e.g. PyGithub for
GitHub's REST API, DOC from npm @octokit/openapi in .tools/aiapi-corpus) the sdist is
fetched and unpacked as benchmarks/quality/make_tasks.py does, to OUT/repos/NAME-VERSION/.
DOC goes into that tree as OUT/repos/NAME-VERSION/openapi/<tag>.json: one document per
tag of DOC, each with the components its operations reference (every operation written,
whatever the tasks are; only `examples`, `example` and `x-` extensions are dropped), since
the project scan indexes files up to 1 MB and GitHub's description is 13 MB.

A task is a line of the package (not in tests/, docs/, examples/ or a generated file) with
a call whose string literal is a path of DOC (`"GET", f"/repos/{owner}/{repo}/pulls",
parameters=...`): the cursor goes right after the path argument and its `, `, and the
rest of the line is the answer (the call's other arguments: what the operation takes).
The call must match an operation with the cursor there and the line cut (what the server
sees), and the answer must hold a letter. At most --per-package tasks, chosen by --seed;
records are those of make_tasks.py (benchmarks/quality/README.md), plus `operation`
(METHOD PATH), so that benchmarks/quality/repo_eval.py runs them unchanged.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from make_tasks import (  # noqa: E402
    GENERATED_MARKER,
    MAX_FILE_LINES,
    MAX_GROUNDTRUTH_CHARS,
    fetch_sdist,
    is_excluded_dir,
    unpack_sdist,
)

from cache.contracts import Contract, summarise  # noqa: E402
from server.completion.contracts import STRING_LITERAL, ContractIndex  # noqa: E402

SCAN_LIMIT = 1_000_000
"""The project scan's file limit (cache.scan.ScanSettings): a split document must fit it."""


def split_by_tag(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One OpenAPI document per tag (an operation's first; "untagged" without), each with
    the `components` its operations reference, transitively; examples and `x-` keys
    dropped, and descriptions too for a tag whose document would pass SCAN_LIMIT."""
    clean = _strip(document, ("examples", "example"))
    by_tag: dict[str, dict[str, Any]] = {}
    for path, item in clean.get("paths", {}).items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or method == "parameters":
                continue
            tag = (operation.get("tags") or ["untagged"])[0]
            paths = by_tag.setdefault(tag, {})
            paths.setdefault(path, {k: v for k, v in item.items() if k == "parameters"})
            paths[path][method] = operation
    documents = {}
    for tag, paths in sorted(by_tag.items()):
        part = {
            "openapi": clean["openapi"],
            "info": {**clean.get("info", {}), "title": f"{clean['info']['title']}: {tag}"},
            "paths": paths,
        }
        part["components"] = _referenced(clean, paths)
        if len(json.dumps(part)) > SCAN_LIMIT:
            part = _strip(part, ("description",))
        documents[tag] = part
    return documents


def _strip(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip(v, keys)
            for k, v in value.items()
            if k not in keys and not (isinstance(k, str) and k.startswith("x-"))
        }
    if isinstance(value, list):
        return [_strip(v, keys) for v in value]
    return value


def _referenced(document: dict[str, Any], root: Any) -> dict[str, dict[str, Any]]:
    """The components that `root` references through local `$ref`s, transitively."""
    components: dict[str, dict[str, Any]] = {}
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/"):
                _, _, kind, name = ref.split("/", 3)
                if name not in components.get(kind, {}):
                    target = document.get("components", {}).get(kind, {}).get(name)
                    if target is not None:
                        components.setdefault(kind, {})[name] = target
                        todo.append(target)
            todo.extend(v for k, v in node.items() if k != "$ref")
    return components


def call_tasks(text: str, rel: str, contracts: ContractIndex) -> list[dict[str, Any]]:
    """The tasks of one file: each cut after a path argument that names an operation."""
    tasks = []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for row, line in enumerate(lines):
        if "(" not in line or "/" not in line:
            continue
        for found in STRING_LITERAL.finditer(line):
            end = found.end()
            if not line.startswith(", ", end) or "(" not in line[: found.start()]:
                continue
            column = end + 2
            answer = line[column:].rstrip()
            if not any(c.isalpha() for c in answer) or len(answer) > MAX_GROUNDTRUTH_CHARS:
                continue
            offset = starts[row] + column
            cut = text[:offset] + text[starts[row] + len(line) :]
            matched = contracts.match(cut, offset)
            if not matched:
                continue
            operation = matched[0][1]
            tasks.append(
                {
                    "file": rel,
                    "prefix": text[:offset],
                    "groundtruth": answer,
                    "suffix": text[offset + len(answer) :],
                    "cursor": {"line": row, "character": column},
                    "operation": f"{operation.method.upper()} {operation.path}",
                }
            )
            break  # one task a line
    return tasks


def package_tasks(repo: Path, contracts: ContractIndex) -> list[dict[str, Any]]:
    tasks = []
    for path in sorted(repo.rglob("*.py")):
        rel = path.relative_to(repo)
        if is_excluded_dir(rel.parts[:-1]):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if text.count("\n") > MAX_FILE_LINES or GENERATED_MARKER.search(text[:2000]):
            continue
        tasks += call_tasks(text, rel.as_posix(), contracts)
    return tasks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--document", type=Path, required=True, help="the OpenAPI document")
    parser.add_argument("--package", action="append", required=True, metavar="NAME==VERSION")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-package", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path(".gpu/eval/sdists"))
    args = parser.parse_args(argv)
    document = json.loads(args.document.read_text(encoding="utf-8"))
    parts = split_by_tag(document)
    summaries: dict[str, Contract] = {}
    for tag, part in parts.items():
        contract = summarise(json.dumps(part), json_text=True)
        if contract is not None:
            summaries[f"openapi/{tag}.json"] = contract
    contracts = ContractIndex.of(summaries)
    (args.out / "repos").mkdir(parents=True, exist_ok=True)
    written = 0
    with (args.out / "tasks.jsonl").open("w", encoding="utf-8") as out:
        for spec in args.package:
            name, _, version = spec.partition("==")
            repo_dir = f"repos/{name}-{version}"
            repo = args.out / repo_dir
            unpack_sdist(fetch_sdist(name, version, args.cache), repo)
            (repo / "openapi").mkdir(exist_ok=True)
            for tag, part in parts.items():
                (repo / "openapi" / f"{tag}.json").write_text(json.dumps(part), encoding="utf-8")
            found = package_tasks(repo, contracts)
            chosen = random.Random(f"{args.seed}:{name}").sample(
                found, min(args.per_package, len(found))
            )
            chosen.sort(key=lambda t: (t["file"], t["cursor"]["line"]))
            for number, task in enumerate(chosen):
                task = {
                    "task_id": f"{name}/contract/{number}",
                    "package": name,
                    "repo_dir": repo_dir,
                    **task,
                }
                out.write(json.dumps(task) + "\n")
            written += len(chosen)
            print(f"{name}: {len(found)} call sites, {len(chosen)} tasks", file=sys.stderr)
    print(f"{written} tasks in {args.out / 'tasks.jsonl'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
