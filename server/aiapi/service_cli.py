"""`headstart aiapi serve` (the job service) and `headstart aiapi key USER` (its keys).

The service's libraries (FastAPI, uvicorn, pydantic-settings) come with the `aiapi-serve`
extra and are imported only when these commands run. Exit codes: 0 served until stopped,
or a key made; 2 a bad setting or keys file; 3 the extra is not installed.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from server.aiapi.api_keys import KeysError, append_key, key_line, new_key

EXTRA_HINT = "pip install 'headstart[aiapi-serve]'"


def add_service_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="the job service: POST /v1/generate, GET /v1/jobs/{id}, its zip",
        description="Serve code generation as jobs over HTTP, each API key with its own "
        "limits. Settings come from HEADSTART_AIAPI_* variables (docs/aiapi.md) and these "
        f"options. Needs the aiapi-serve extra ({EXTRA_HINT}).",
    )
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8080)")
    serve.add_argument("--keys-file", type=Path, help="the API keys (USER:sha256:HEX lines)")
    serve.add_argument("--data-dir", type=Path, help="where jobs keep their files")
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="of the service's log on stderr (default info)",
    )
    key = commands.add_parser(
        "key",
        help="make an API key for the job service",
        description="Print a new API key for USER, and keep only its SHA-256: appended to "
        "--keys-file, or printed as the line to add there.",
    )
    key.add_argument("user", help="whose key it is (letters, digits, ._@+-)")
    key.add_argument("--keys-file", type=Path, help="append the key's line to this file")


def run_service_command(args: argparse.Namespace) -> int:
    if args.aiapi_command == "key":
        return make_key(args.user, args.keys_file)
    return serve(args)


def make_key(user: str, keys_file: Path | None) -> int:
    key = new_key()
    try:
        line = key_line(user, key)
    except KeysError as exc:
        print(f"headstart aiapi key: {exc}", file=sys.stderr)
        return 2
    if keys_file is not None:
        append_key(keys_file, line)
        print(
            f"added {user}'s key to {keys_file}; give them the key (shown once):", file=sys.stderr
        )
    else:
        print(f"the line for the keys file: {line}", file=sys.stderr)
        print(f"give {user} the key (shown once):", file=sys.stderr)
    print(key)
    return 0


def serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn
        from pydantic import ValidationError

        from server.aiapi.service import create_app
        from server.aiapi.service_settings import ServiceSettings
    except ImportError as exc:
        print(f"headstart aiapi serve: {exc.name} is missing: {EXTRA_HINT}", file=sys.stderr)
        return 3
    options = {
        name: getattr(args, name)
        for name in ("host", "port", "keys_file", "data_dir")
        if getattr(args, name) is not None
    }
    try:
        settings = ServiceSettings(**options)
    except ValidationError as exc:
        print(f"headstart aiapi serve: bad settings:\n{exc}", file=sys.stderr)
        return 2
    from server.aiapi.api_keys import KeyRing

    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        keys = KeyRing(settings.keys_file, settings.keys)
    except KeysError as exc:
        print(f"headstart aiapi serve: {exc}", file=sys.stderr)
        return 2
    os.umask(0o077)  # documents and generated code are the users': readable by us alone
    app = create_app(settings, keys)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level)
    return 0
