"""The `headstart` command: serve, demo, backend status."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from server import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="headstart", description=__doc__)
    parser.add_argument("--version", action="version", version=f"headstart {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen for one client over TCP")

    index = commands.add_parser("index", help="index a folder into the project cache")
    index.add_argument("path", type=Path, help="the workspace root")
    index.add_argument("--cache-dir", type=Path, help="where the store goes")

    demo = commands.add_parser(
        "demo", help="drive the server over LSP on the sample project and print suggestions"
    )
    demo.add_argument("--backend-url", help="an OpenAI-compatible base URL (…/v1)")
    demo.add_argument("--model", help="a local model folder for the vLLM this starts")

    backend = commands.add_parser("backend", help="the completion backend")
    backend_commands = backend.add_subparsers(dest="backend_command", required=True)
    backend_commands.add_parser("status", help="is the configured backend answering?")

    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve_lsp(args.tcp)
    if args.command == "index":
        return index_folder(args.path, args.cache_dir)
    if args.command == "demo":
        from server import demo as demo_module

        return demo_module.main(args.backend_url, args.model)
    return backend_status()


def serve_lsp(tcp: str | None) -> int:
    from server.lsp import server

    server.configure_logging()
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not port.isdigit():
            print(f"--tcp wants HOST:PORT, got {tcp!r}", file=sys.stderr)
            return 2
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    # LSP: exit code 0 only if `shutdown` came before `exit`
    return 0 if server.shutdown_requested else 1


def index_folder(root: Path, cache_dir: Path | None) -> int:
    """Cold or warm index of `root`, with a progress bar and a summary (on stderr/stdout)."""
    from cache.index import ProjectIndex

    if not root.is_dir():
        print(f"{root} is not a folder", file=sys.stderr)
        return 2

    def bar(done: int, total: int) -> None:
        filled = 30 * done // max(total, 1)
        print(
            f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} files",
            end="",
            file=sys.stderr,
            flush=True,
        )

    index = ProjectIndex(root, cache_dir=cache_dir)
    try:
        summary = index.build(progress=bar)
    finally:
        index.close()
    print(file=sys.stderr)
    top = ", ".join(f"{lang} {n}" for lang, n in summary.languages.most_common(8))
    print(
        f"{summary.files} files ({top}); {summary.edges} import edges; "
        f"{summary.outlined} new or changed, {summary.rehashed} re-hashed, "
        f"{summary.reused} unchanged, "
        f"{summary.removed} removed; {summary.seconds:.2f} s; "
        f"store {summary.store_bytes / 1e6:.1f} MB at {index.store.path}"
    )
    return 0


def backend_status() -> int:
    from server.config import load_settings
    from server.local_vllm import served_models

    settings = load_settings()
    models = served_models(settings.backend.url)
    if models is None:
        print(f"{settings.backend.url}: not answering (set HEADSTART_BACKEND_URL)")
        return 1
    print(f"{settings.backend.url}: serving {', '.join(models) or 'no models'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
