"""False positives of the secret masking (`cache.secrets`) on real code, by rule.

Runs the detector over every text file of the task sets' package sources (the repositories
`benchmarks/quality/make_tasks.py` unpacks, `.gpu/eval/*/repos` here) or any folders given, as the
index does (files of credentials by content left out whole, the rest masked line by line),
and counts the masked values: real packages hold no live credentials, so each one is a
value the model will not see (test fixtures' fake keys included; the examples say which).
With `--tasks`, it also counts the repository-level tasks whose prompt masking changes:
those whose own prefix or suffix loses a value, and those whose repository has any masked
value in a file other than the task's (an upper bound for the other files' snippets);
with `--prompts` too, the tasks whose whole prompt differs, built as the server builds it
over the indexed repository (minutes: every repository is indexed).

    .venv/bin/python benchmarks/quality/secrets_false_positives.py .gpu/eval/*/repos \\
        --tasks .gpu/eval/*/tasks.jsonl [--prompts] --out /tmp/secrets_fp.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cache.scan import is_secret_name  # noqa: E402
from cache.secrets import (  # noqa: E402
    candidate_lines,
    generic,
    mask_window,
    secret_file_reason,
    syntax_of,
)
from cache.secrets.gitleaks import rule_set  # noqa: E402

TEXT_SUFFIXES = {
    ".py", ".pyi", ".js", ".ts", ".go", ".java", ".rs", ".rb", ".php", ".sh", ".yaml",
    ".yml", ".toml", ".json", ".cfg", ".ini", ".txt", ".md", ".rst", ".html", ".xml",
    ".properties", ".tf", ".conf", "",
}  # fmt: skip
MAX_BYTES = 1 << 20


def findings(text: str, path: str) -> list[tuple[str, str, str]]:
    """(rule, value, line) for every value the detector masks in `text`."""
    syntax = syntax_of(path)
    lines = text.split("\n")
    out: list[tuple[str, str, str]] = []
    for number in candidate_lines(text):
        line = lines[number]
        for found in rule_set().find(line, f"file.{syntax}" if syntax else "file"):
            out.append((f"gitleaks:{found.rule}", line[found.start : found.end], line))
        for found in generic.line_findings(line, syntax):
            out.append((found.rule, line[found.start : found.end], line))
    for number, (start, end) in generic.key_block_lines(text).items():
        out.append(("private-key-block", lines[number][start:end], lines[number]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--tasks", nargs="*", type=Path, default=[])
    parser.add_argument("--examples", type=int, default=4)
    parser.add_argument(
        "--prompts",
        action="store_true",
        help="build every task's prompt as the server does (its repository indexed), with "
        "and without masking, and count those that differ",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    by_rule: Counter[str] = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    secret_files: dict[str, str] = {}
    masked_files: dict[str, int] = {}
    files = chars = 0
    for folder in args.folders:
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
                continue
            if path.stat().st_size > MAX_BYTES or is_secret_name(path.name):
                continue
            text = path.read_bytes().decode("utf-8", "replace")
            if "\0" in text[:8192]:
                continue
            files += 1
            chars += len(text)
            relative = str(path)
            reason = secret_file_reason(text, relative)
            if reason is not None:
                secret_files[relative] = reason
                continue
            found = findings(text, relative)
            if found:
                masked_files[relative] = len(found)
            for rule, _value, line in found:
                by_rule[rule] += 1
                if len(examples[rule]) < args.examples:
                    examples[rule].append(f"{path.name}: {line.strip()[:140]}")
    seconds = time.perf_counter() - started
    result: dict[str, object] = {
        "files": files,
        "megabytes": round(chars / 1e6, 2),
        "seconds": round(seconds, 1),
        "masked_values": sum(by_rule.values()),
        "files_with_masked_values": len(masked_files),
        "files_left_out_as_credentials": secret_files,
        "by_rule": dict(by_rule.most_common()),
        "examples": examples,
    }
    if args.tasks:
        result["tasks"] = task_changes(args.tasks, masked_files)
    if args.tasks and args.prompts:
        result["task_prompts"] = prompt_changes(args.tasks)
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


def task_changes(task_files: list[Path], masked_files: dict[str, int]) -> dict[str, int]:
    """How many tasks' prompts masking changes (see the module's docstring)."""
    total = own = repository = 0
    for task_file in task_files:
        for raw in task_file.read_text().splitlines():
            task = json.loads(raw)
            total += 1
            prefix, suffix = task["prefix"], task["suffix"]
            if mask_window(prefix, suffix, prefix + suffix, task["file"]) != (prefix, suffix):
                own += 1
            repo = str((task_file.parent / task["repo_dir"]).resolve())
            own_path = str((task_file.parent / task["repo_dir"] / task["file"]).resolve())
            if any(
                Path(p).resolve().as_posix().startswith(repo + "/")
                and str(Path(p).resolve()) != own_path
                for p in masked_files
            ):
                repository += 1
    return {"tasks": total, "own_file_changed": own, "repository_has_masked_values": repository}


def prompt_changes(task_files: list[Path]) -> dict[str, object]:
    """Tasks whose whole prompt (`plan_request` over the indexed repository, default
    settings) differs with masking on and off."""
    import tempfile

    import server.completion.context.files as files_module
    import server.completion.request as request_module
    from cache.index import ProjectIndex
    from server.completion.context import ContextBuilder
    from server.completion.request import CursorContext, plan_request
    from server.config import CompletionSettings

    real = (
        request_module.mask_document,
        request_module.mask_snippet,
        files_module.masked_lines,
        files_module.masked_text,
        files_module.mask_known,
    )
    bare = (
        lambda prefix, suffix, document, path: (prefix, suffix),
        lambda text, path, current, document: text,
        lambda text, path="", known=None: text.split("\n"),
        lambda text, path="": text,
        lambda text, values: text,
    )

    def use(functions: tuple[object, ...]) -> None:
        (
            request_module.mask_document,
            request_module.mask_snippet,
            files_module.masked_lines,
            files_module.masked_text,
            files_module.mask_known,
        ) = functions  # type: ignore[assignment]

    settings = CompletionSettings()
    total = 0
    changed: list[str] = []
    indexes: dict[Path, ProjectIndex] = {}
    with tempfile.TemporaryDirectory() as cache_dir:
        for task_file in task_files:
            for raw in task_file.read_text().splitlines():
                task = json.loads(raw)
                repo = (task_file.parent / task["repo_dir"]).resolve()
                if repo not in indexes:
                    indexes[repo] = ProjectIndex(repo, cache_dir=Path(cache_dir))
                    indexes[repo].build()
                prompts = []
                for functions in (real, bare):
                    use(functions)
                    builder = ContextBuilder(indexes[repo])
                    text = task["prefix"] + task["suffix"]
                    ctx = CursorContext(
                        text, len(task["prefix"]), task["file"], task["package"], "python",
                        builder,
                    )  # fmt: skip
                    prompts.append(plan_request(ctx, settings)[0].prompt)
                use(real)
                total += 1
                if prompts[0] != prompts[1]:
                    changed.append(task["task_id"])
        for index in indexes.values():
            index.close()
    return {"tasks": total, "prompt_changed": len(changed), "changed_task_ids": changed}


if __name__ == "__main__":
    main()
