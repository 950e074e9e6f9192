"""The Python server stub: a FastAPI app over the client's pydantic v2 models, by us.

fastapi-code-generator, the well-kept generator for FastAPI, does not fit (docs/aiapi.md):
0.8.1 pins datamodel-code-generator below 0.66 and click below 8.2, while the client's
models come from datamodel-code-generator 0.97, so it cannot share an environment with
the client generator, and it writes models of its own; its output does not pass
`mypy --strict` (handlers are `pass` under a return type, `FastAPI(license=...)`), and a
handler left as generated answers 200 with `null` rather than 501. So this is a template
over FastAPI that reuses the client's models byte for byte:

    <title>_server/models.py    the client's models (or models/ package), copied
    <title>_server/handlers.py  a class per operation group (first tag) and `Handlers`,
                                which inherits them all; every method answers 501
    <title>_server/app.py       create_app(handlers): one route per operation
    <title>_server/__main__.py  python -m <title>_server --port 8000 (uvicorn)
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.naming import comment_text
from server.aiapi.operations import Parameter
from server.aiapi.python_client import (
    PythonClientTemplate,
    _top_level_names,
    argument_names,
    header,
    package_name,
    ruff_format,
)
from server.aiapi.stub_operations import (
    StubOperation,
    group_names,
    routing_order,
    stub_operations,
)

LOCATIONS = {"path": "Path", "query": "Query", "header": "Header"}


def server_package_name(document: ContractDocument) -> str:
    return package_name(document).removesuffix("_client") + "_server"


def generate_python_server(document: ContractDocument, out: Path, client_package: Path) -> Path:
    """Write <title>_server under `out`, beside the client package whose models it copies."""
    package = out / server_package_name(document)
    if package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    if (client_package / "models").is_dir():
        shutil.copytree(client_package / "models", package / "models")
        model_names = _top_level_names((package / "models" / "__init__.py").read_text())
    else:
        shutil.copyfile(client_package / "models.py", package / "models.py")
        model_names = _top_level_names((package / "models.py").read_text())
    template = PythonServerTemplate(document, model_names, package.name)
    (package / "handlers.py").write_text(template.handlers(), encoding="utf-8")
    (package / "app.py").write_text(template.app(), encoding="utf-8")
    (package / "__main__.py").write_text(template.main(), encoding="utf-8")
    (package / "__init__.py").write_text(
        f'"""{header(document, "A FastAPI server stub")}\n\n'
        "Subclass Handlers, override the operations you implement (the others answer 501\n"
        'Not Implemented), and serve create_app(YourHandlers()) with any ASGI server."""\n\n'
        "from .app import create_app\n"
        "from .handlers import Handlers\n\n"
        '__all__ = ["Handlers", "create_app"]\n',
        encoding="utf-8",
    )
    (package / "py.typed").write_text("", encoding="utf-8")
    ruff_format(package)
    return package


class PythonServerTemplate:
    def __init__(self, document: ContractDocument, model_names: set[str], package: str) -> None:
        self.document = document
        self.package = package
        self.types = PythonClientTemplate(document, model_names)
        self.operations = stub_operations(document)
        self.groups = group_names(self.operations, "Handlers", {"Handlers"})

    # -- types -----------------------------------------------------------------------------

    def parameter_type(self, param: Parameter) -> str:
        """What FastAPI reads a parameter into: primitives, lists of them, else text."""
        kind = self.types.parameter_type(param.schema)
        return {"Any": "str", "list[Any]": "list[str]"}.get(kind, kind)

    def body_type(self, stub: StubOperation) -> str | None:
        """The handler's `body` type: the JSON body's, or bytes for any other media type."""
        body = stub.op.body
        if body is None:
            return None
        return self.types.type_of(body.schema) if body.is_json else "bytes"

    def result_type(self, stub: StubOperation) -> str:
        result = stub.op.result
        if result.media_type is None:
            return "Response | None"
        if not result.is_json:
            return "bytes | Response"
        kind = self.types.type_of(result.schema)
        return "Any" if kind == "Any" else f"{kind} | Response"

    def arguments(self, stub: StubOperation) -> list[tuple[Parameter, str]]:
        return argument_names(stub.op)

    # -- handlers.py -----------------------------------------------------------------------

    def handlers(self) -> str:
        classes = []
        for group, class_name in self.groups.items():
            methods = "\n".join(
                self._handler(stub) for stub in self.operations if stub.group == group
            )
            what = "untagged operations" if group == "default" else "operations tagged"
            tag = "" if group == "default" else f" {comment_text(group)!r}"
            classes.append(f'class {class_name}:\n    """The {what}{tag}."""\n\n{methods}\n')
        bases = ", ".join(self.groups.values()) or "object"
        return (
            f'"""{header(self.document, "Handlers of the server stub")}\n\n'
            "Each method is one operation of the contract and answers 501 Not Implemented\n"
            "until it is overridden: subclass Handlers (in a module of your own, as\n"
            "regenerating rewrites this one), implement what you serve, and pass an\n"
            "instance to create_app. A method returns what the contract answers on success\n"
            "(sent with the contract's status) or any fastapi Response; raise\n"
            'fastapi.HTTPException for an error the contract declares."""\n\n'
            "from __future__ import annotations\n\n"
            + _imports(
                "".join(classes),
                {"typing": ["Any"], "fastapi": ["HTTPException", "Response"]},
                always={"HTTPException"},
            )
            + "\n\n"
            "def not_implemented(operation: str) -> HTTPException:\n"
            '    """The answer of every method not overridden: 501 Not Implemented."""\n'
            "    return HTTPException(\n"
            "        status_code=501,\n"
            '        detail=f"Not Implemented: {operation} (TODO: override it in a Handlers '
            'subclass)",\n'
            "    )\n\n\n"
            + "\n\n".join(classes)
            + f'\n\nclass Handlers({bases}):\n    """Every operation of the API."""\n'
        )

    def _signature(self, stub: StubOperation) -> str:
        required, optional = [], []
        for param, name in self.arguments(stub):
            kind = self.parameter_type(param)
            if param.required:
                required.append(f"{name}: {kind}")
            else:
                optional.append(f"{name}: {kind} | None = None")
        body = self.body_type(stub)
        if body is not None:
            if stub.op.body_required:
                required.append(f"body: {body}")
            else:
                optional.append(f"body: {body} | None = None")
        arguments = [*required, *optional]
        return ", ".join(["self", "*", *arguments] if arguments else ["self"])

    def _handler(self, stub: StubOperation) -> str:
        summary = comment_text(stub.op.summary) or stub.label
        label = comment_text(stub.label)
        result = stub.op.result
        if result.media_type is None:
            answer = f"None (sent as {stub.status} with no body)"
        elif result.is_json:
            answer = f"the {stub.status} answer"
        else:
            answer = f"the {stub.status} answer's bytes ({result.media_type})"
        skipped = f"\n        Not routed: {stub.skip}." if stub.skip else ""
        return (
            f"    async def {stub.python_name}({self._signature(stub)}) -> "
            f"{self.result_type(stub)}:\n"
            f'        """{summary} ({label}): returns {answer}.{skipped}"""\n'
            f"        # TODO: implement {stub.python_name}\n"
            f'        raise not_implemented("{stub.python_name} ({label})")\n'
        )

    # -- app.py ----------------------------------------------------------------------------

    def app(self) -> str:
        document = self.document
        endpoints = "\n".join(self._endpoint(stub) for stub in routing_order(self.operations))
        skipped = "".join(
            f"    # not routed: {stub.python_name} ({comment_text(stub.label)}): {stub.skip}\n"
            for stub in self.operations
            if stub.skip
        )
        body = endpoints + skipped
        imports = _imports(
            body,
            {
                "typing": ["Annotated", "Any"],
                "fastapi": [
                    "APIRouter",
                    "Body",
                    "FastAPI",
                    "Header",
                    "Path",
                    "Query",
                    "Request",
                    "Response",
                ],
            },
            always={"Any", "APIRouter", "FastAPI"},
        )
        return f'''"""{header(document, "The FastAPI app of the server stub")}

One route per operation, each validating its request with FastAPI (the parameters, and
JSON bodies into the models) and calling its method of the handlers. Routes are relative
to the server's base path: give create_app a prefix to serve them under one."""

from __future__ import annotations

{imports}
from .handlers import Handlers

__all__ = ["create_app", "create_router"]


def create_app(handlers: Handlers | None = None, *, prefix: str = "") -> FastAPI:
    """The API as an ASGI app; without handlers every operation answers 501."""
    app = FastAPI(title={document.title!r}, version={document.api_version!r})
    routes = create_router(handlers if handlers is not None else Handlers())
    app.include_router(routes, prefix=prefix)
    return app


def create_router(handlers: Handlers) -> APIRouter:
    """The routes, each calling its method of `handlers`."""
    _impl = handlers
    _router = APIRouter()
{skipped}
{endpoints}
    return _router
'''

    def _endpoint(self, stub: StubOperation) -> str:
        op = stub.op
        named = self.arguments(stub)
        python_names = {p.name: n for p, n in named if p.location == "path"}
        route = re.sub(
            r"\{([^{}]+)\}",
            lambda m: "{" + python_names.get(m.group(1), m.group(1)) + "}",
            op.route,
        )
        required, optional, passed = [], [], []
        for param, name in named:
            kind = self.parameter_type(param)
            where = LOCATIONS[param.location]
            marker = f"{where}(alias={param.name!r})" if where != "Path" else "Path()"
            if param.required:
                required.append(f"{name}: Annotated[{kind}, {marker}]")
            else:
                optional.append(f"{name}: Annotated[{kind} | None, {marker}] = None")
            passed.append(f"{name}={name}")
        read_body = ""
        body = self.body_type(stub)
        if body is not None and op.body is not None:
            if op.body.is_json:
                if op.body_required:
                    required.append(f"body: Annotated[{body}, Body()]")
                else:
                    optional.append(f"body: Annotated[{body} | None, Body()] = None")
            else:
                required.insert(0, "_request: Request")
                read_body = "        body = await _request.body()\n"
            passed.append(
                "body=body" if op.body.is_json or op.body_required else "body=body or None"
            )
        response_model = "None"
        result = op.result
        if result.is_json and result.media_type is not None:
            kind = self.types.type_of(result.schema)
            response_model = "None" if kind == "Any" else kind
        call = f"await _impl.{stub.python_name}({', '.join(passed)})"
        if result.media_type is None:
            finish = (
                f"        result = {call}\n"
                f"        return result if isinstance(result, Response) else "
                f"Response(status_code={stub.status})\n"
            )
        elif not result.is_json:
            finish = (
                f"        result = {call}\n"
                "        if isinstance(result, Response):\n"
                "            return result\n"
                f"        return Response(result, status_code={stub.status}, "
                f"media_type={result.media_type!r})\n"
            )
        else:
            finish = f"        return {call}\n"
        decorator = [
            f"{op.route!r}" if route == op.route else f"{route!r}",
            f"methods=[{op.method.upper()!r}]",
            f"status_code={stub.status}",
            f"response_model={response_model}",
        ]
        if response_model != "None":
            decorator.append("response_model_exclude_unset=True")
        decorator.append(f"operation_id={(op.operation_id or stub.python_name)!r}")
        if op.summary:
            decorator.append(f"summary={comment_text(op.summary)!r}")
        if stub.group != "default":
            decorator.append(f"tags=[{stub.group!r}]")
        parameters = ", ".join([*required, *optional])
        return (
            f"    @_router.api_route({', '.join(decorator)})\n"
            f"    async def endpoint_{stub.python_name}({parameters}) -> Any:\n"
            f"{read_body}{finish}\n"
        )

    # -- __main__.py -----------------------------------------------------------------------

    def main(self) -> str:
        return f'''"""Serve the stub: python -m {self.package} [--host 127.0.0.1] [--port 8000].

Every operation answers 501 until Handlers is subclassed; serve your own subclass with
uvicorn.run(create_app(YourHandlers()))."""

from __future__ import annotations

import argparse

import uvicorn

from .app import create_app


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m {self.package}")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--prefix", default="", help="a base path to serve the routes under")
    args = parser.parse_args()
    uvicorn.run(create_app(prefix=args.prefix), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
'''


def _imports(body: str, modules: dict[str, list[str]], always: set[str]) -> str:
    """Import lines for the names `body` uses, then `from . import models` if it uses it."""
    lines = []
    for module, names in modules.items():
        used = [n for n in names if n in always or re.search(rf"\b{n}\b", body)]
        if used:
            lines.append(f"from {module} import {', '.join(used)}\n")
    if re.search(r"\bmodels\.", body):
        lines.append("from . import models\n")
    return "\n".join(lines)


def handler_methods(document: ContractDocument) -> dict[str, Any]:
    """Each routed handler method's name, for the checks that fill them in."""
    return {stub.python_name: stub for stub in stub_operations(document) if stub.skip is None}
