"""`headstart aiapi generate SPEC --lang ... [--kinds client,server,tests] [--react-query]
--out DIR [--zip] [--verify]`.

Exit codes: 0 generated (and, with --verify, every checker passed); 1 a generator or a
checker failed; 2 the document is invalid, or a `$ref` of it points outside its folder or
to a URL and --allow-outside-refs was not given (each problem printed as FILE:LINE: path:
message); 3 a tool is missing (the message says how to install it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from server.aiapi.service_cli import add_service_parsers, run_service_command

if TYPE_CHECKING:
    from server.aiapi.document import ContractDocument
    from server.aiapi.model_parts import ModelOptions

LANGUAGE_CHOICES = ("python", "typescript", "go")


def add_aiapi_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    aiapi = commands.add_parser("aiapi", help="code from API contracts (OpenAPI 3.x)")
    aiapi_commands = aiapi.add_subparsers(dest="aiapi_command", required=True)
    generate = aiapi_commands.add_parser(
        "generate",
        help="a typed client per language from an OpenAPI 3.x document",
        description="Validate an OpenAPI 3.x document (YAML or JSON), then write a typed "
        "client for each language into OUT/<language>: Python (pydantic v2 models + httpx, "
        "sync and async), TypeScript (zod + fetch, by @hey-api/openapi-ts), Go (structs + "
        "net/http with context.Context); and beside each client a server stub (FastAPI, "
        "node:http, net/http; every operation answers 501 until implemented) and a test "
        "skeleton (pytest, vitest, go test) calling each operation.",
    )
    generate.add_argument("spec", type=Path, help="the OpenAPI 3.x document")
    generate.add_argument(
        "--lang",
        default=",".join(LANGUAGE_CHOICES),
        help="comma-separated: python,typescript,go (default: all three)",
    )
    generate.add_argument(
        "--kinds",
        default="client,server,tests",
        help="comma-separated: client,server,tests (default: all three); the client is "
        "always written, as the server stub and the test skeleton build on it",
    )
    generate.add_argument(
        "--react-query",
        action="store_true",
        help="also write TanStack React Query options for each operation into the "
        "TypeScript client (src/@tanstack/react-query.gen.ts, by openapi-ts's "
        "@tanstack/react-query plugin), with @tanstack/react-query as its dependency",
    )
    generate.add_argument("--out", type=Path, required=True, help="the output folder")
    generate.add_argument("--zip", action="store_true", help="also write OUT.zip")
    generate.add_argument(
        "--verify",
        action="store_true",
        help="run mypy --strict, tsc --noEmit and go vet over what was generated, and the "
        "contract tests of each client against a Prism mock of the document; serve the "
        "Python and Go stubs and run their test skeletons against them, and the Python "
        "test skeleton against Prism",
    )
    generate.add_argument(
        "--allow-outside-refs",
        action="store_true",
        help="follow $refs wherever they point: files outside the document's folder, "
        "absolute paths and URLs (fetched). Without it, only refs inside the document "
        "('#...') and relative paths to files in its folder or below are followed, and "
        "a document with any other is refused (exit 2), as a document from someone else "
        "could otherwise read your files into the generated code or make it fetch URLs",
    )
    generate.add_argument(
        "--with-model",
        action="store_true",
        help="let the model write the Python client's docstrings, its README and the test "
        "skeleton's example arguments, the Go client's doc comments and the TypeScript "
        "client's TSDoc comments (at the "
        "refactor priority, from the same backend settings as the editor); a piece that "
        "fails the checks keeps the generated text (docs/aiapi.md, Model-written parts)",
    )
    generate.add_argument(
        "--settings",
        default="{}",
        help="with --with-model: Headstart settings as JSON, as an editor sends them "
        "(HEADSTART_BACKEND_URL and the other HEADSTART_* variables still win)",
    )
    add_service_parsers(aiapi_commands)


def run_aiapi(args: argparse.Namespace) -> int:
    if args.aiapi_command != "generate":
        return run_service_command(args)
    from server.aiapi.document import ContractError, load_document
    from server.aiapi.pipeline import generate_contract, write_zip
    from server.aiapi.scaffold import KINDS, parse_kinds
    from server.aiapi.tools import ToolMissing

    languages = tuple(part.strip() for part in args.lang.split(",") if part.strip())
    unknown = [lang for lang in languages if lang not in LANGUAGE_CHOICES]
    if unknown or not languages:
        print(
            f"headstart aiapi generate: unknown --lang {', '.join(unknown) or '(none)'}; "
            f"choose from {','.join(LANGUAGE_CHOICES)}",
            file=sys.stderr,
        )
        return 2
    if args.react_query and "typescript" not in languages:
        print(
            "headstart aiapi generate: --react-query adds hooks to the TypeScript client; "
            f"add typescript to --lang (now {','.join(languages)})",
            file=sys.stderr,
        )
        return 2
    try:
        kinds = parse_kinds(args.kinds)
    except ValueError as exc:
        print(f"headstart aiapi generate: unknown --kinds {exc}; choose from {','.join(KINDS)}",
              file=sys.stderr)  # fmt: skip
        return 2
    options = None
    if args.with_model:
        from server.aiapi.model_parts import model_options
        from server.config import SettingsError

        try:
            options = model_options(args.settings)
        except (SettingsError, ValueError) as exc:
            print(f"headstart aiapi generate: bad --settings: {exc}", file=sys.stderr)
            return 2
    if not args.allow_outside_refs and _refuses_references(args.spec):
        return 2
    try:
        document = load_document(args.spec)
    except ContractError as exc:
        count = len(exc.problems)
        print(f"{args.spec}: not a valid OpenAPI 3.x document ({count} problem"
              f"{'s' if count != 1 else ''}):", file=sys.stderr)  # fmt: skip
        print(str(exc), file=sys.stderr)
        return 2

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    say(f"{document.title} {document.api_version} (OpenAPI {document.openapi_version})")
    try:
        result = generate_contract(
            document, args.out, languages, verify=args.verify, contract=args.verify, progress=say,
            kinds=kinds, react_query=args.react_query,
        )  # fmt: skip
    except ToolMissing as exc:
        print(f"headstart aiapi generate: {exc}", file=sys.stderr)
        return 3
    for entry in result.languages:
        if entry.generate_error:
            print(f"{entry.language}: generation failed: {entry.generate_error}", file=sys.stderr)
        elif entry.check is not None and not entry.check.ok:
            print(
                f"{entry.language}: {entry.check.checker} failed:\n{entry.check.output}",
                file=sys.stderr,
            )
        elif entry.contract is not None and not entry.contract.ok:
            print(
                f"{entry.language}: contract tests failed:\n{entry.contract.output}",
                file=sys.stderr,
            )
        else:
            print(f"{entry.language}: {entry.folder}")
    for scaffold in result.scaffolds:
        if scaffold.generate_error:
            print(f"{scaffold.label}: generation failed: {scaffold.generate_error}",
                  file=sys.stderr)  # fmt: skip
        elif scaffold.check is not None and not scaffold.check.ok:
            print(f"{scaffold.label}: {scaffold.check.checker} failed:\n{scaffold.check.output}",
                  file=sys.stderr)  # fmt: skip
        elif scaffold.run is not None and not scaffold.run.ok:
            print(f"{scaffold.label}: {scaffold.run_what} failed:\n{scaffold.run.output}",
                  file=sys.stderr)  # fmt: skip
        else:
            print(f"{scaffold.label}: {scaffold.folder}")
    if options is not None:
        _write_model_parts(document, args.out, languages, options, say)
    if args.zip:
        archive = write_zip(args.out, args.out.with_name(args.out.name + ".zip"))
        print(f"zip: {archive}")
    return 0 if result.ok else 1


def _refuses_references(spec: Path) -> bool:
    """Whether `spec` has `$ref`s outside its folder or to URLs (each printed at its line,
    as an invalid document's problems are). Checked before anything resolves them."""
    from server.aiapi.document import ContractError
    from server.aiapi.local_refs import ReferencePolicy, refused_problems

    policy = ReferencePolicy(
        spec.absolute().parent,
        "the document's folder",
        hint=" (--allow-outside-refs follows it)",
    )
    problems = refused_problems(spec, policy)
    if not problems:
        return False
    count = len(problems)
    print(f"{spec}: refused: {count} $ref{'s' if count != 1 else ''} outside the document's "
          "folder or to a URL, which are not followed without --allow-outside-refs:",
          file=sys.stderr)  # fmt: skip
    print(str(ContractError(spec, problems)), file=sys.stderr)
    return True


def _write_model_parts(
    document: ContractDocument,
    out: Path,
    languages: tuple[str, ...],
    options: ModelOptions,
    say: Callable[[str], None],
) -> None:
    """The model-written parts over what was generated (a report line per language)."""
    from server.aiapi.model_writers import write_model_parts

    for report in write_model_parts(document, out, languages, options, progress=say):
        say(report.summary())
