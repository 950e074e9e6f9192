"""Run by stub_check.py in a fresh interpreter: serve a generated Python server stub.

    python -m server.aiapi.stub_serve FOLDER PACKAGE PORT [EXAMPLES.json]

Without EXAMPLES the handlers are the generated ones (every operation answers 501); with
it, each method named there answers its example instead: {"method": {"kind": "json" |
"bytes" | "none", "value": ...}}. A process of its own, as packages of the same name from
different documents must never meet in one sys.modules.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any


def answering(answer: dict[str, Any]) -> Callable[..., Awaitable[Any]]:
    kind, value = answer["kind"], answer.get("value")

    async def method(self: Any, **_: Any) -> Any:
        if kind == "none":
            return None
        if kind == "bytes":
            return value.encode() if isinstance(value, str) else json.dumps(value).encode()
        return value

    return method


def main(folder: str, package: str, port: str, examples_path: str | None = None) -> int:
    import uvicorn

    sys.path.insert(0, folder)
    app_module = importlib.import_module(f"{package}.app")
    handlers_module = importlib.import_module(f"{package}.handlers")
    handlers_class: type[Any] = handlers_module.Handlers
    if examples_path:
        with open(examples_path, encoding="utf-8") as examples_file:
            examples = json.load(examples_file)
        handlers_class = type(
            "ExampleHandlers",
            (handlers_module.Handlers,),
            {name: answering(answer) for name, answer in examples.items()},
        )
    app = app_module.create_app(handlers_class())
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
