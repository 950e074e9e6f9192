"""Test skeletons: one test per operation, calling the generated client against the server
whose base URL is in an environment variable (SWAGGER_PETSTORE_BASE_URL for the
petstore), with example arguments; each test is skipped while the variable is unset.

The arguments are the contract tests' own (`contract_examples.example_value`: the parameters'
examples, defaults, enums and schemas), required ones only; credentials are placeholders
for every security scheme, which a mock such as Prism accepts. A test passes when the
server accepts the request and the client reads the answer into the type it declares;
each says TODO where a person checks what the answer holds.

    python/tests/test_<title>.py    pytest, over the Python client
    typescript/tests/api.test.ts    vitest, over openapi-ts's SDK
    go/contracttest/api_test.go     go test, over the Go client (package contracttest)
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.aiapi.contract import credentials
from server.aiapi.contract_examples import example_value
from server.aiapi.document import ContractDocument
from server.aiapi.naming import comment_text
from server.aiapi.operations import Operation, Parameter
from server.aiapi.python_client import (
    PythonClientTemplate,
    _top_level_names,
    argument_names,
    header,
    ruff_format,
)
from server.aiapi.stub_operations import StubOperation, base_url_variable, stub_operations

PYTHON_SCALARS = {"str": str, "int": int, "float": float, "bool": bool}


@dataclass(frozen=True)
class ExampleValues:
    """One test's values in place of the generator's (the model's, once they pass): by
    parameter name, and the body when `has_body`. A parameter named here is sent even
    when it is optional."""

    parameters: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False


ValuesByOperation = Mapping[tuple[str, str], ExampleValues]
"""Per operation, by (method, route)."""
NO_VALUES = ExampleValues()


def prism_hint(document: ContractDocument) -> str:
    return f"prism mock {document.path.name}"


# ---------------------------------------------------------------------------------------
# Python: pytest


def generate_python_tests(document: ContractDocument, out: Path, client_package: Path) -> Path:
    """Write out/tests/ (a package, so pytest puts `out` on sys.path and the client beside
    it imports) with one test module; return the folder."""
    folder = out / "tests"
    folder.mkdir(parents=True, exist_ok=True)
    models = client_package / "models.py"
    if not models.exists():
        models = client_package / "models" / "__init__.py"
    source = models.read_text(encoding="utf-8")
    template = PythonTestTemplate(document, client_package.name, _top_level_names(source), source)
    module = folder / f"test_{client_package.name.removesuffix('_client')}.py"
    module.write_text(template.render(), encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    ruff_format(folder)
    return folder


def _classes(source: str) -> tuple[set[str], set[str]]:
    """The models' top-level classes, and those of them that are pydantic models."""
    classes: set[str] = set()
    pydantic_models: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            classes.add(node.name)
            bases = [ast.unparse(base) for base in node.bases]
            if any("BaseModel" in b or "RootModel" in b or b in pydantic_models for b in bases):
                pydantic_models.add(node.name)
    return classes, pydantic_models


class PythonTestTemplate:
    def __init__(
        self,
        document: ContractDocument,
        client_package: str,
        model_names: set[str],
        models_source: str,
    ) -> None:
        self.document = document
        self.client_package = client_package
        self.types = PythonClientTemplate(document, model_names)
        self.all_classes, self.pydantic_classes = _classes(models_source)

    def literal(self, kind: str, value: Any) -> str:
        """`value` as an expression of type `kind` (a type the client's signature names)."""
        if kind == "Any":
            return repr(value)
        name = kind.removeprefix("models.")
        if kind.startswith("models.") and name in self.pydantic_classes:
            return f"{kind}.model_validate({value!r})"
        if "models." in kind or kind == "bytes":
            return f"pydantic.TypeAdapter({kind}).validate_python({value!r})"
        return repr(value)

    def parameter_literal(self, param: Parameter, value: Any) -> str:
        kind = self.types.parameter_type(param.schema)
        return repr(_coerce(kind, value))

    def render(self) -> str:
        document = self.document
        headers, params = credentials(document)
        variable = base_url_variable(document)
        tests = "\n\n".join(self._test(stub) for stub in stub_operations(document))
        uses_models = re.search(r"\bmodels\.", tests) is not None
        uses_pydantic = "pydantic." in tests
        imports = "import pydantic\n" if uses_pydantic else ""
        client_import = f"from {self.client_package}.client import Client\n"
        if uses_models:
            client_import = f"from {self.client_package} import models\n" + client_import
        return f'''"""{header(document, "Contract tests")}

One test per operation: it calls the client against the server at ${variable}, with
example arguments, and passes when the server accepts the request and the client reads
the answer into the type it declares. Skipped while ${variable} is not set.

    {prism_hint(document)}                       # a mock that plays the contract
    {variable}=http://127.0.0.1:4010 pytest tests

TODO: check what each answer holds, and send the credentials your server wants."""

from __future__ import annotations

import os
from collections.abc import Iterator

{imports}import pytest

{client_import}
BASE_URL_VARIABLE = {variable!r}
# Placeholders for the document's security schemes, as a mock accepts. TODO: real ones.
HEADERS: dict[str, str] = {headers!r}
PARAMS: dict[str, str] = {params!r}


@pytest.fixture
def client() -> Iterator[Client]:
    base_url = os.environ.get(BASE_URL_VARIABLE)
    if not base_url:
        pytest.skip(f"set {{BASE_URL_VARIABLE}} to the base URL of a server to test")
    with Client(base_url, headers=HEADERS, params=PARAMS, timeout=60.0) as api:
        yield api


{tests}
'''

    def _arguments(self, op: Operation) -> list[str]:
        arguments = []
        for param, name in argument_names(op):
            if param.required:
                value = example_value(self.document, param.schema)
                arguments.append(f"{name}={self.parameter_literal(param, value)}")
        if op.body is not None and op.body_required:
            value = example_value(self.document, op.body.schema)
            if op.body.is_json:
                arguments.append(f"body={self.literal(self.types.type_of(op.body.schema), value)}")
            elif op.body.is_form:
                arguments.append(f"data={value if isinstance(value, dict) else {}!r}")
            else:
                arguments.append("content=b'a'")
        return arguments

    def _test(self, stub: StubOperation) -> str:
        op = stub.op
        summary = comment_text(op.summary)
        doc = f"{comment_text(stub.label)}: {summary}" if summary else comment_text(stub.label)
        call = f"client.{stub.python_name}({', '.join(self._arguments(op))})"
        skip = f"@pytest.mark.skip(reason={stub.skip!r})\n" if stub.skip else ""
        check = self._check(op)
        if check is None:
            body = f"    {call}\n    # TODO: check what the server did\n"
        else:
            body = f"    result = {call}\n    # TODO: check what the answer holds\n{check}"
        return (
            f'{skip}def test_{stub.python_name}(client: Client) -> None:\n    """{doc}"""\n{body}'
        )

    def _check(self, op: Operation) -> str | None:
        """An assertion on the answer's type, or None when the method returns nothing."""
        if op.result.media_type is None:
            return None
        if not op.result.is_json:
            return "    assert isinstance(result, bytes)\n"
        kind = self.types.type_of(op.result.schema)
        name = kind.removeprefix("models.")
        if kind.startswith("models.") and name in self.all_classes:
            return f"    assert isinstance(result, {kind})\n"
        for prefix, runtime in (("list[", "list"), ("dict[", "dict")):
            if kind.startswith(prefix) and not kind.endswith("| None"):
                return f"    assert isinstance(result, {runtime})\n"
        if kind in PYTHON_SCALARS:
            return f"    assert isinstance(result, {kind})\n"
        return "    del result  # typed as the contract declares it\n"


def _coerce(kind: str, value: Any) -> Any:
    """An example value as the parameter's Python type (an enum of numbers for a string...)."""
    if kind.startswith("list["):
        items = value if isinstance(value, list) else [value]
        return [_coerce(kind[5:-1], item) for item in items]
    if kind == "str":
        return value if isinstance(value, str) else json.dumps(value)
    if kind == "bool":
        return value if isinstance(value, bool) else True
    if kind == "int":
        return value if isinstance(value, int) and not isinstance(value, bool) else 1
    if kind == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return 1.0
    return value


# ---------------------------------------------------------------------------------------
# Go: go test, in package contracttest of the client's module

GO_TESTS_PACKAGE = "contracttest"
GO_KINDS = {"string": "str", "int64": "int", "float64": "float", "bool": "bool"}


def generate_go_tests(document: ContractDocument, module: Path) -> Path:
    """Write module/contracttest/api_test.go, gofmt'd; return the folder."""
    from server.aiapi.go_server import gofmt, module_name

    folder = module / GO_TESTS_PACKAGE
    folder.mkdir(parents=True, exist_ok=True)
    signatures = client_signatures((module / "client.go").read_text(encoding="utf-8"))
    source = GoTestTemplate(document, module_name(module), signatures).render()
    (folder / "api_test.go").write_text(source, encoding="utf-8")
    gofmt(folder, "api_test.go")
    return folder


def client_signatures(source: str) -> dict[str, dict[str, str]]:
    """Each method of the Go Client (client.go, gofmt'd): its parameters' names and types,
    so that the skeleton passes each argument as the client takes it."""
    found: dict[str, dict[str, str]] = {}
    for match in re.finditer(r"^func \(c \*Client\) (\w+)\(([^)]*)\)", source, re.MULTILINE):
        parameters = {}
        for part in match.group(2).split(","):
            name, _, kind = part.strip().partition(" ")
            parameters[name] = kind.strip()
        found[match.group(1)] = parameters
    return found


class GoTestTemplate:
    def __init__(
        self, document: ContractDocument, module: str, signatures: dict[str, dict[str, str]]
    ) -> None:
        from server.aiapi.go_server import GoTypes, go_methods

        self.document = document
        self.module = module
        self.signatures = signatures
        self.types = GoTypes(document)
        self.methods = {(op.route, op.method): name for name, op in go_methods(document)}

    def render(self, values: ValuesByOperation | None = None) -> str:
        from server.aiapi.go_client import _go_string

        document = self.document
        headers, params = credentials(document)
        variable = base_url_variable(document)
        chosen = values or {}
        tests = "\n".join(
            self._test(stub, chosen.get((stub.op.method, stub.op.route), NO_VALUES))
            for stub in stub_operations(document)
        )
        header_lines = "".join(
            f"\tclient.Header.Set({_go_string(k)}, {_go_string(v)})\n" for k, v in headers.items()
        )
        transport = ""
        query_type = ""
        if params:
            entries = "".join(f"{_go_string(k)}: {_go_string(v)}, " for k, v in params.items())
            transport = (
                f"\tclient.HTTPClient = &http.Client{{Transport: queryCredentials{{{entries}}}}}\n"
            )
            query_type = QUERY_CREDENTIALS
        imports = ['"context"']
        if "json." in tests:
            imports.append('"encoding/json"')
        if params:
            imports.append('"net/http"')
        if "url.Values" in tests:
            imports.append('"net/url"')
        imports += ['"os"', '"testing"']
        return (
            f"// Package {GO_TESTS_PACKAGE}: {header(document, 'contract tests')}\n"
            "//\n"
            f"// One test per operation: it calls the client against the server at ${variable},\n"
            "// with example arguments, and passes when the server accepts the request and the\n"
            "// client reads the answer into the type it declares. Skipped while the variable\n"
            "// is not set.\n"
            "//\n"
            f"//\t{prism_hint(document)}\n"
            f"//\t{variable}=http://127.0.0.1:4010 go test ./{GO_TESTS_PACKAGE}\n"
            "//\n"
            "// TODO: check what each answer holds, and send the credentials your server wants.\n"
            f"package {GO_TESTS_PACKAGE}\n\n"
            "import (\n" + "".join(f"\t{i}\n" for i in imports) + "\n"
            f'\tapi "{self.module}"\n)\n\n'
            f"const baseURLVariable = {_go_string(variable)}\n\n"
            "func newClient(t *testing.T) *api.Client {\n"
            "\tt.Helper()\n"
            "\tbaseURL := os.Getenv(baseURLVariable)\n"
            '\tif baseURL == "" {\n'
            '\t\tt.Skip("set " + baseURLVariable + " to the base URL of a server to test")\n'
            "\t}\n"
            "\tclient := api.NewClient(baseURL)\n"
            + (
                "\t// Placeholders for the document's security schemes. TODO: real ones.\n"
                if headers or params
                else ""
            )
            + header_lines
            + transport
            + "\treturn client\n}\n"
            + query_type
            + "\n"
            + tests
        )

    def _test(self, stub: StubOperation, chosen: ExampleValues) -> str:
        from server.aiapi.go_client import _go_string

        op = stub.op
        name = self.methods[(op.route, op.method)]
        lines = ["\tclient := newClient(t)\n"]
        if stub.skip:
            lines.insert(0, f"\tt.Skip({_go_string(stub.skip)})\n")
        arguments = ["context.Background()"]
        for param in op.parameters:
            if param.required:
                kind = self.types.parameter(param)
                arguments.append(_go_literal(kind, _value_of(self.document, param, chosen)))
        body = self.types.body(op)
        taken = self.signatures.get(name, {}).get("body")
        if body is not None and taken is not None:  # the client's own type for it
            body = self.types.qualify(taken)
        if body is not None and op.body is not None:
            value = chosen.body if chosen.has_body else example_value(self.document, op.body.schema)
            if body == "url.Values":
                fields = value if isinstance(value, dict) else {}
                entries = ", ".join(
                    f"{_go_string(str(k))}: {{{_go_string(_text_value(v))}}}"
                    for k, v in fields.items()
                )
                arguments.append(f"url.Values{{{entries}}}")
            elif body == "[]byte":
                if op.body.is_form and "multipart" not in (op.body.media_type or ""):
                    from urllib.parse import urlencode

                    fields = value if isinstance(value, dict) else {}
                    text = urlencode({k: v if isinstance(v, str) else json.dumps(v)
                                      for k, v in fields.items()})  # fmt: skip
                else:
                    text = "a"
                arguments.append(f"[]byte({_go_string(text)})")
            else:
                lines.append(
                    f"\tvar body {body}\n"
                    f"\tif err := json.Unmarshal([]byte({_go_string(json.dumps(value))}), "
                    "&body); err != nil {\n\t\tt.Fatal(err)\n\t}\n"
                )
                arguments.append("body")
        if any(not p.required for p in op.parameters):
            arguments.append("nil")
        call = f"client.{name}({', '.join(arguments)})"
        if self.types.result(op) is None:
            lines.append(
                f'\tif err := {call}; err != nil {{\n\t\tt.Fatalf("{name}: %v", err)\n\t}}\n'
            )
            lines.append("\t// TODO: check what the server did\n")
        else:
            lines.append(
                f"\tresult, err := {call}\n\tif err != nil {{\n"
                f'\t\tt.Fatalf("{name}: %v", err)\n\t}}\n'
                "\t// TODO: check what the answer holds\n\t_ = result\n"
            )
        summary = comment_text(op.summary)
        doc = f"{comment_text(stub.label)}: {summary}" if summary else comment_text(stub.label)
        return f"// Test{name}: {doc}\nfunc Test{name}(t *testing.T) {{\n{''.join(lines)}}}\n"


def _value_of(document: ContractDocument, param: Parameter, chosen: ExampleValues) -> Any:
    if param.name in chosen.parameters:
        return chosen.parameters[param.name]
    return example_value(document, param.schema)


def _text_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _go_literal(kind: str, value: Any) -> str:
    from server.aiapi.go_client import _go_string

    if kind.startswith("[]"):
        items = value if isinstance(value, list) else [value]
        inner = kind[2:]
        return f"{kind}{{{', '.join(_go_literal(inner, item) for item in items)}}}"
    coerced = _coerce(GO_KINDS.get(kind, "str"), value)
    if kind == "bool":
        return "true" if coerced else "false"
    if kind in ("int64", "float64"):
        return repr(coerced)
    return _go_string(str(coerced))


QUERY_CREDENTIALS = """
// queryCredentials adds credentials the API reads from the query to every request.
type queryCredentials map[string]string

func (credentials queryCredentials) RoundTrip(request *http.Request) (*http.Response, error) {
	request = request.Clone(request.Context())
	query := request.URL.Query()
	for name, value := range credentials {
		query.Set(name, value)
	}
	request.URL.RawQuery = query.Encode()
	return http.DefaultTransport.RoundTrip(request)
}
"""


# ---------------------------------------------------------------------------------------
# TypeScript: vitest, over openapi-ts's SDK


def generate_typescript_tests(document: ContractDocument, out: Path) -> Path:
    """Write out/tests/api.test.ts beside openapi-ts's src/; return the folder."""
    from server.aiapi.typescript_server import add_to_package, sdk_functions

    folder = out / "tests"
    folder.mkdir(parents=True, exist_ok=True)
    template = TypeScriptTestTemplate(document, sdk_functions(out / "src"))
    (folder / "api.test.ts").write_text(template.render(), encoding="utf-8")
    add_to_package(out, "tests")
    return folder


class TypeScriptTestTemplate:
    def __init__(self, document: ContractDocument, functions: dict[Any, Any]) -> None:
        self.document = document
        self.functions = functions

    def render(self, values: ValuesByOperation | None = None) -> str:
        document = self.document
        chosen = values or {}
        headers, _ = credentials(document)  # query credentials: the SDK's auth callback
        variable = base_url_variable(document)
        tests = []
        used = []
        for stub in stub_operations(document):
            function = self.functions.get((stub.op.method, stub.op.route))
            if function is None:
                tests.append(
                    f"  test.skip({json.dumps(stub.label)}, () => {{\n"
                    "    // openapi-ts wrote no SDK function for this operation\n  });\n"
                )
                continue
            used.append(function.name)
            example = chosen.get((stub.op.method, stub.op.route), NO_VALUES)
            tests.append(self._test(stub, function.name, example))
        imports = (
            f'import {{ {", ".join(sorted(set(used)))} }} from "../src/sdk.gen";\n' if used else ""
        )
        title = json.dumps(f"{document.title} at ${variable}")
        return (
            f"// {header(document, 'Contract tests')}\n"
            "//\n"
            f"// One test per operation: it calls the SDK against the server at ${variable},\n"
            "// with example arguments, and passes when the server accepts the request and the\n"
            "// SDK reads (and validates) the answer. Skipped while the variable is not set.\n"
            "//\n"
            f"//   {prism_hint(document)}\n"
            f"//   {variable}=http://127.0.0.1:4010 npx vitest run\n"
            "//\n"
            "// TODO: check what each answer holds, and send the credentials your server wants.\n\n"
            'import { describe, expect, test } from "vitest";\n\n'
            'import { createClient } from "../src/client";\n'
            f"{imports}\n"
            f"const baseUrl = process.env[{json.dumps(variable)}];\n\n"
            "// Placeholders for the document's security schemes, as a mock accepts.\n"
            "// TODO: real ones.\n"
            "const client = createClient({\n"
            '  baseUrl: baseUrl ?? "",\n'
            f"  headers: {json.dumps(headers)},\n"
            '  auth: (auth) => (auth.scheme === "basic" ? "user:pass" : "contract-test-key"),\n'
            "});\n\n"
            f"describe.skipIf(!baseUrl)({title}, () => {{\n" + "\n".join(tests) + "});\n"
        )

    def _test(self, stub: StubOperation, name: str, chosen: ExampleValues) -> str:
        op = stub.op
        groups: dict[str, dict[str, str]] = {}
        for param in op.parameters:
            if param.required or param.name in chosen.parameters:
                where = {"path": "path", "query": "query", "header": "headers"}[param.location]
                value = _value_of(self.document, param, chosen)
                groups.setdefault(where, {})[param.name] = _ts_literal(
                    self.document, param.schema, value
                )
        options = ["client"]
        for where, values in groups.items():
            fields = ", ".join(f"{json.dumps(k)}: {v}" for k, v in values.items())
            options.append(f"{where}: {{ {fields} }}")
        if op.body is not None and (op.body_required or chosen.has_body):
            value = chosen.body if chosen.has_body else example_value(self.document, op.body.schema)
            if op.body.is_json or op.body.is_form:
                options.append(f"body: {_ts_literal(self.document, op.body.schema, value)}")
            elif (op.body.media_type or "").startswith("text/"):
                options.append('body: "a"')
            else:
                options.append('body: new Blob(["a"])')
        call = f"await {name}({{ {', '.join(options)} }})"
        label = json.dumps(f"{name}: {stub.label}")
        kind = "test.skip" if stub.skip else "test"
        summary = comment_text(op.summary).replace("*/", "* /")
        doc = f"  /** {summary} */\n" if summary else ""
        return (
            f"{doc}  {kind}({label}, async () => {{\n"
            f"    const {{ data, error, response }} = {call};\n"
            "    expect(error).toBeUndefined();\n"
            "    expect(response.ok).toBe(true);\n"
            "    // TODO: check what the answer holds\n"
            "    void data;\n"
            "  });\n"
        )


def _ts_literal(document: ContractDocument, schema: Any, value: Any, depth: int = 0) -> str:
    """A value as a TypeScript expression of the type openapi-ts gives the schema: JSON,
    but binary strings as Blobs."""
    resolved = document.resolve(schema)
    if isinstance(resolved, dict) and depth < 12:
        from server.aiapi.operations import schema_types

        declared, _ = schema_types(resolved)
        if declared == "string" and resolved.get("format") == "binary":
            return 'new Blob(["a"])'
        if isinstance(value, dict):
            properties = resolved.get("properties") or {}
            if not properties:
                for part in resolved.get("allOf") or []:
                    part = document.resolve(part)
                    if isinstance(part, dict):
                        properties = {**properties, **(part.get("properties") or {})}
            fields = ", ".join(
                f"{json.dumps(k)}: {_ts_literal(document, properties.get(k), v, depth + 1)}"
                for k, v in value.items()
            )
            return f"{{ {fields} }}"
        if isinstance(value, list):
            items = resolved.get("items")
            return "[" + ", ".join(_ts_literal(document, items, v, depth + 1) for v in value) + "]"
    return json.dumps(value)
