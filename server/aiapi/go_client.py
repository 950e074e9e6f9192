"""The Go client: structs and a net/http client taking a context.Context, standard library only.

No Go module proxy is reachable here, and the Go generators worth using (oapi-codegen,
ogen) are Go modules with dependencies of their own, so this is a template over the
standard library: one `type` per component schema, one method per operation, gofmt'd and
checked with `go vet`. Go 1.19 (Debian's golang-go) is the floor.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.naming import UniqueNames, camel, comment_text, pascal, words
from server.aiapi.operations import (
    Operation,
    collect_operations,
    component_schema_name,
    schema_types,
)
from server.aiapi.python_client import header
from server.aiapi.tools import GeneratorError, go_tool

GO_VERSION = "1.19"
RESERVED_TYPES = {"Client", "NewClient", "APIError", "DefaultBaseURL"}
RESERVED_METHODS = {"BaseURL", "HTTPClient", "Header", "Do"}
RESERVED_ARGUMENTS = {
    "c", "ctx", "params", "body", "query", "header", "path", "out", "err", "reader",
    "bool", "byte", "error", "float64", "float32", "int64", "int32", "int", "string", "any",
    "len", "nil", "true", "false", "append", "make", "new", "url", "http", "fmt", "json", "io",
    "strings", "context", "bytes", "rune", "uint", "copy", "cap", "close", "delete", "panic",
    "print", "println", "real", "imag", "complex", "recover", "iota", "max", "min", "clear",
}  # fmt: skip
TAG_SAFE = re.compile(r"^[^\s\"\\`,]+$")
PRIMITIVES = {"string": "string", "number": "float64", "boolean": "bool"}


def package_name(document: ContractDocument) -> str:
    name = "".join(w.lower() for w in words(document.title))[:30]
    return name if name and name[0].isalpha() else f"api{name}"


def generate_go(document: ContractDocument, out: Path) -> Path:
    """Write go.mod, models.go and client.go under `out`, gofmt'd; return `out`."""
    out.mkdir(parents=True, exist_ok=True)
    template = GoTemplate(document)
    models = template.models()
    client = template.client()
    name = package_name(document)
    (out / "go.mod").write_text(f"module {name}\n\ngo {GO_VERSION}\n", encoding="utf-8")
    (out / "models.go").write_text(models, encoding="utf-8")
    (out / "client.go").write_text(client, encoding="utf-8")
    done = subprocess.run(
        [go_tool("gofmt"), "-w", "models.go", "client.go"],
        cwd=out,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise GeneratorError("go", "gofmt rejected the generated code", done.stderr)
    return out


def go_methods(document: ContractDocument) -> list[tuple[str, Operation]]:
    """Each operation with the name of its method on Client."""
    names = UniqueNames(RESERVED_METHODS)
    return [
        (names.claim(pascal("_".join(op.name_words), "Call"), ""), op)
        for op in collect_operations(document)
    ]


class GoTemplate:
    def __init__(self, document: ContractDocument) -> None:
        self.document = document
        self.package = package_name(document)
        self.type_names = UniqueNames(RESERVED_TYPES)
        schemas = (document.data.get("components") or {}).get("schemas") or {}
        self.schemas: dict[str, Any] = schemas if isinstance(schemas, dict) else {}
        self.named = {
            name: self.type_names.claim(pascal(name, "Schema"), "") for name in self.schemas
        }
        self.uses_json = False

    def head(self) -> str:
        return f"// Package {self.package}: {header(self.document, 'a typed client')}\n"

    def struct_like(self, schema: Any) -> bool:
        schema = self.document.resolve(schema)
        return isinstance(schema, dict) and self._properties(schema) is not None

    def go_type(self, schema: Any, depth: int = 0) -> str:
        """The Go type of a schema's values; json.RawMessage where it cannot tell."""
        if not isinstance(schema, dict) or depth > 8:
            return self._raw()
        name = component_schema_name(schema)
        if name is not None and name in self.named:
            return self.named[name]
        if "$ref" in schema:
            return self.go_type(self.document.resolve(schema), depth + 1)
        declared, _ = schema_types(schema)
        if declared == "integer":
            return "int32" if schema.get("format") == "int32" else "int64"
        if declared in PRIMITIVES:
            return PRIMITIVES[declared]
        if declared == "array":
            return "[]" + self.field_type(schema.get("items"), True, depth + 1)
        if declared == "object" or (declared is None and "properties" in schema):
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra and not schema.get("properties"):
                return "map[string]" + self.field_type(extra, True, depth + 1)
            if not any(k in schema for k in ("allOf", "oneOf", "anyOf")):
                return "map[string]any"
        return self._raw()

    def field_type(self, schema: Any, required: bool, depth: int = 0) -> str:
        """Structs by pointer (which also breaks cycles), optional scalars by pointer."""
        kind = self.go_type(schema, depth)
        if kind.startswith(("[]", "map[")) or kind == "json.RawMessage" or kind == "any":
            return kind
        if self.struct_like(schema) and component_schema_name(schema) is not None:
            return "*" + kind
        return kind if required else "*" + kind

    def _raw(self) -> str:
        self.uses_json = True
        return "json.RawMessage"

    def _properties(self, schema: dict[str, Any], depth: int = 0) -> dict[str, Any] | None:
        """Properties of an object schema, allOf parts merged; None if not an object."""
        if depth > 8 or schema_types(schema)[0] not in (None, "object"):
            return None  # wealthreader's `entities` lists properties and is an array
        merged: dict[str, Any] = {}
        found = False
        if isinstance(schema.get("properties"), dict):
            merged.update(schema["properties"])
            found = True
        elif schema_types(schema)[0] == "object" and not any(
            k in schema for k in ("oneOf", "anyOf", "additionalProperties")
        ):
            found = True
        for part in schema.get("allOf") or []:
            part_schema = self.document.resolve(part)
            inner = (
                self._properties(part_schema, depth + 1) if isinstance(part_schema, dict) else None
            )
            if inner is None:
                return None
            merged.update(inner)
            found = True
        if schema.get("oneOf") or schema.get("anyOf"):
            return None
        return merged if found else None

    def _required(self, schema: dict[str, Any], depth: int = 0) -> set[str]:
        names = {r for r in schema.get("required") or [] if isinstance(r, str)}
        for part in schema.get("allOf") or []:
            part_schema = self.document.resolve(part)
            if isinstance(part_schema, dict) and depth < 8:
                names |= self._required(part_schema, depth + 1)
        return names

    def models(self) -> str:
        blocks = []
        for name, raw in self.schemas.items():
            type_name = self.named[name]
            schema = raw if isinstance(raw, dict) else {}
            doc = comment_text(schema.get("description") or schema.get("title"))
            comment = f"// {type_name} is the schema {comment_text(name)}"
            comment += f": {doc}" if doc else "."
            properties = None if "$ref" in schema else self._properties(schema)
            if properties is None:
                target = self.go_type(schema) if "$ref" not in schema else self.go_type(schema, 1)
                if target == type_name:
                    target = self._raw()
                alias = "= " if target == "json.RawMessage" else ""
                blocks.append(f"{comment}\ntype {type_name} {alias}{target}\n")
            else:
                blocks.append(
                    f"{comment}\ntype {type_name} struct {{\n{self._fields(schema, properties)}}}\n"
                )
        imports = 'import "encoding/json"\n\n' if self.uses_json else ""
        return f"{self.head()}package {self.package}\n\n{imports}" + "\n".join(blocks)

    def _fields(self, schema: dict[str, Any], properties: dict[str, Any]) -> str:
        required = self._required(schema)
        names = UniqueNames()
        lines = []
        for json_name, prop in properties.items():
            if not TAG_SAFE.match(str(json_name)):
                lines.append(f"\t// {comment_text(json_name)}: a name a json tag cannot carry\n")
                continue
            field = names.claim(pascal(str(json_name), "Field"), "")
            kind = self.field_type(prop, json_name in required)
            omit = "" if json_name in required else ",omitempty"
            description = comment_text(prop.get("description") if isinstance(prop, dict) else "")
            if description:
                lines.append(f"\t// {field}: {description}\n")
            lines.append(f'\t{field} {kind} `json:"{json_name}{omit}"`\n')
        return "".join(lines)

    def client(self) -> str:
        servers = self.document.data.get("servers") or []
        base_url = ""
        if servers and isinstance(servers[0], dict):
            from server.aiapi.python_client import _server_url

            base_url = _server_url(servers[0])
        parts = [self._operation(name, op) for name, op in go_methods(self.document)]
        return (
            self.head()
            + f"package {self.package}\n\n"
            + CLIENT_PRELUDE.replace("DEFAULT_BASE_URL", _go_string(base_url))
            + "".join(parts)
        )

    def _parameter_type(self, schema: Any) -> str:
        schema = self.document.resolve(schema)
        if not isinstance(schema, dict):
            return "string"
        declared, _ = schema_types(schema)
        if declared == "array":
            inner = self.document.resolve(schema.get("items"))
            inner_type = schema_types(inner)[0] if isinstance(inner, dict) else None
            if inner_type == "integer":
                return "[]int64"
            return "[]" + PRIMITIVES.get(inner_type or "", "string")
        if declared == "integer":
            return "int64"
        return PRIMITIVES.get(declared or "", "string")

    def _operation(self, name: str, op: Operation) -> str:
        arguments = UniqueNames(RESERVED_ARGUMENTS)
        signature = ["ctx context.Context"]
        steps = ["\tquery := url.Values{}\n", "\theader := http.Header{}\n"]
        path_values: dict[str, str] = {}
        optional = []
        for param in op.parameters:
            kind = self._parameter_type(param.schema)
            if param.required:
                variable = arguments.claim(camel(param.name), "")
                signature.append(f"{variable} {kind}")
                value = variable
            else:
                optional.append((param, kind))
                continue
            if param.location == "path":
                path_values[param.name] = (
                    f"pathList({value})"
                    if kind.startswith("[]")
                    else f"url.PathEscape(fmt.Sprint({value}))"
                )
            else:
                steps.append(self._send(param.location, param.name, value, kind))
        body_reader = "nil"
        content_type = '""'
        if op.body is not None:
            multipart = op.body.is_form and "multipart" in (op.body.media_type or "").lower()
            kind = (
                self.go_type(op.body.schema)
                if op.body.is_json
                else "url.Values"
                if op.body.is_form
                else "[]byte"
            )
            signature.append(f"body {kind}")
            media_type = op.body.media_type or ""
            if op.body.is_json and "*" in media_type:
                media_type = "application/json"  # the JSON it sends, not `*/*` (id4i.de)
            content_type = _go_string(media_type)
            if op.body.is_form and not op.body_required:
                # an optional form left nil is no body: an empty one is a form Prism checks
                # for its required fields (appwrite's file upload, 422)
                if multipart:
                    fill = (
                        "\t\tform, err := multipartReader(body)\n\t\tif err != nil {\n"
                        f"\t\t\treturn {self._zero(op)}err\n\t\t}}\n"
                        "\t\treader, formType = form, form.contentType\n"
                    )
                else:
                    fill = (
                        f"\t\treader, formType = strings.NewReader(body.Encode()), {content_type}\n"
                    )
                steps.append(
                    f'\tvar reader io.Reader\n\tformType := ""\n\tif body != nil {{\n{fill}\t}}\n'
                )
                body_reader, content_type = "reader", "formType"
            elif op.body.is_json or multipart:
                # a multipart body's content type names the boundary its writer chose
                encode = "jsonReader(body)" if op.body.is_json else "multipartReader(body)"
                steps.append(
                    f"\treader, err := {encode}\n\tif err != nil {{\n"
                    f"\t\treturn {self._zero(op)}err\n\t}}\n"
                )
                body_reader = "reader"
                if multipart:
                    body_reader, content_type = "reader", "reader.contentType"
            elif op.body.is_form:
                body_reader = "strings.NewReader(body.Encode())"
            else:
                body_reader = "bytes.NewReader(body)"
        path = _route_expression(op.route, path_values)
        params_type = ""
        if optional:
            params_type = self.type_names.claim(name + "Params", "")
            fields = UniqueNames()
            lines = []
            sends = []
            for param, kind in optional:
                field = fields.claim(pascal(param.name, "Param"), "")
                lines.append(f"\t{field} *{kind}\n")
                sends.append(
                    self._send(
                        param.location,
                        param.name,
                        f"*params.{field}",
                        kind,
                        f"params.{field} != nil",
                    )
                )
            signature.append(f"params *{params_type}")
            steps.append(
                "\tif params != nil {\n"
                + "".join("\t" + s.replace("\n\t", "\n\t\t") for s in sends)
                + "\t}\n"
            )
        result, out_decl, out_arg, success = self._result(op)
        summary = comment_text(op.summary) or f"calls {op.method.upper()} {comment_text(op.route)}"
        params_block = (
            f"// {params_type} holds the optional parameters of {name}.\n"
            f"type {params_type} struct {{\n{''.join(lines)}}}\n\n"
            if optional
            else ""
        )
        return (
            f"\n{params_block}// {name}: {summary}\n"
            f"func (c *Client) {name}({', '.join(signature)}) {result} {{\n"
            + "".join(steps)
            + out_decl
            + f"\tif err := c.do(ctx, {_go_string(op.method.upper())}, {path}, query, header, "
            f"{body_reader}, {content_type}, {out_arg}); err != nil {{\n"
            f"\t\treturn {self._zero(op)}err\n\t}}\n"
            f"\treturn {success}\n}}\n"
        )

    def _send(self, location: str, name: str, value: str, kind: str, guard: str = "") -> str:
        target = "query" if location == "query" else "header"
        key = _go_string(name)
        if kind.startswith("[]"):
            line = (
                f"\tfor _, item := range {value} {{\n"
                f"\t\t{target}.Add({key}, fmt.Sprint(item))\n\t}}\n"
            )
        else:
            line = f"\t{target}.Set({key}, fmt.Sprint({value}))\n"
        if guard:
            inner = line.replace("\n\t", "\n\t\t")
            return f"\tif {guard} {{\n\t{inner}\t}}\n"
        return line

    def _result_type(self, op: Operation) -> str | None:
        if op.result.media_type is None:
            return None
        return self.go_type(op.result.schema) if op.result.is_json else "[]byte"

    def _zero(self, op: Operation) -> str:
        return "nil, " if self._result_type(op) is not None else ""

    def _result(self, op: Operation) -> tuple[str, str, str, str]:
        kind = self._result_type(op)
        if kind is None:
            return "error", "", "nil", "nil"
        if kind == "[]byte":
            return "([]byte, error)", "\tvar out []byte\n", "&out", "out, nil"
        return f"(*{kind}, error)", f"\tvar out {kind}\n", "&out", "&out, nil"


def _route_expression(route: str, values: dict[str, str]) -> str:
    """'/pets/{id}' as `"/pets/" + url.PathEscape(fmt.Sprint(id))`."""
    parts = []
    last = 0
    for match in re.finditer(r"\{([^{}]+)\}", route):
        if match.group(1) in values:
            parts.append(_go_string(route[last : match.start()]))
            parts.append(values[match.group(1)])
            last = match.end()
    parts.append(_go_string(route[last:]))
    return " + ".join(p for p in parts if p != '""') or '""'


def _go_string(text: str) -> str:
    """A Go interpreted string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'


# gofmt writes this with tabs and long lines; it is Go, not Python, so ruff leaves it be.
CLIENT_PRELUDE = """import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
)

// DefaultBaseURL is the first server the document names.
const DefaultBaseURL = DEFAULT_BASE_URL

// Client calls the API. The zero HTTPClient means http.DefaultClient.
type Client struct {
	BaseURL    string
	HTTPClient *http.Client
	Header     http.Header
}

// NewClient returns a Client for baseURL, or DefaultBaseURL when it is empty.
func NewClient(baseURL string) *Client {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	return &Client{BaseURL: baseURL, Header: http.Header{}}
}

// APIError is an answer outside 2xx, with its body.
type APIError struct {
	StatusCode int
	Body       []byte
}

func (e *APIError) Error() string {
	return fmt.Sprintf("status %d: %s", e.StatusCode, e.Body)
}

// pathList is a list path parameter in the simple style: its items joined by commas.
func pathList[T any](items []T) string {
	parts := make([]string, len(items))
	for i, item := range items {
		parts[i] = url.PathEscape(fmt.Sprint(item))
	}
	return strings.Join(parts, ",")
}

func isJSON(contentType string) bool {
	kind := strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	return kind == "" || kind == "application/json" || strings.HasSuffix(kind, "+json")
}

// formBody is a multipart body and the content type that names its boundary.
type formBody struct {
	*bytes.Buffer
	contentType string
}

// multipartReader writes form fields as multipart/form-data parts (text parts).
func multipartReader(fields url.Values) (*formBody, error) {
	var buffer bytes.Buffer
	writer := multipart.NewWriter(&buffer)
	for key, values := range fields {
		for _, value := range values {
			if err := writer.WriteField(key, value); err != nil {
				return nil, err
			}
		}
	}
	if err := writer.Close(); err != nil {
		return nil, err
	}
	return &formBody{&buffer, writer.FormDataContentType()}, nil
}

func jsonReader(value any) (io.Reader, error) {
	data, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(data), nil
}

func (c *Client) do(
	ctx context.Context, method, path string, query url.Values, header http.Header,
	body io.Reader, contentType string, out any,
) error {
	target := strings.TrimRight(c.BaseURL, "/") + path
	request, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return err
	}
	if len(query) > 0 {
		request.URL.RawQuery = query.Encode()
	}
	for _, headers := range []http.Header{c.Header, header} {
		for key, values := range headers {
			for _, value := range values {
				request.Header.Add(key, value)
			}
		}
	}
	if contentType != "" {
		request.Header.Set("Content-Type", contentType)
	}
	client := c.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	response, err := client.Do(request)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	if err != nil {
		return err
	}
	if response.StatusCode < 200 || response.StatusCode > 299 {
		return &APIError{StatusCode: response.StatusCode, Body: data}
	}
	switch into := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*into = data
		return nil
	case *string:
		if !isJSON(response.Header.Get("Content-Type")) {
			*into = string(data) // text, where the document allows any media type
			return nil
		}
	}
	if len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}
"""
