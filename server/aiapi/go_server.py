"""The Go server stub: net/http handlers over the client's structs, standard library only.

    go/server/server.go   package server: an interface per operation group (first tag)
                          and Service embedding them all; Unimplemented, whose every method
                          returns ErrNotImplemented (answered 501); NewHandler(service),
                          an http.Handler that routes, parses and validates the parameters
                          and the body into a <Operation>Request, and writes the answer

The structs are the root package's (models.go, shared with the client), imported as
`api`. Debian's golang-go is Go 1.19, and http.ServeMux learned methods and wildcards
("GET /pets/{petId}") only in Go 1.22, so the stub routes itself: one anchored regexp per
route over the escaped path, literal segments tried before templated ones, 405 with Allow
for a known route in another method. It builds the same on newer Go.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.go_client import RESERVED_METHODS, GoTemplate, _go_string
from server.aiapi.naming import UniqueNames, comment_text, pascal
from server.aiapi.operations import Operation, Parameter, collect_operations
from server.aiapi.python_client import header
from server.aiapi.stub_operations import (
    StubOperation,
    group_names,
    response_example,
    route_pattern,
    routing_order,
    stub_operations,
)
from server.aiapi.tools import GeneratorError, go_tool, tools_folder

SERVER_PACKAGE = "server"
PARSERS = {"string": "parseString", "int64": "parseInt64", "float64": "parseFloat64",
           "bool": "parseBool"}  # fmt: skip
RESERVED_TYPES = {
    "Service", "Unimplemented", "HTTPError", "ErrNotImplemented", "NewHandler", "handler",
    "route", "routes",
}  # fmt: skip


def go_environment() -> dict[str, str]:
    """go's settings for the checks: no proxy, this toolchain, caches under .tools."""
    cache = tools_folder() / "aiapi-go-cache"
    return {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GO111MODULE": "on",
        "GOCACHE": str(cache / "build"),
        "GOPATH": str(cache / "path"),
    }


def module_name(module: Path) -> str:
    return (module / "go.mod").read_text(encoding="utf-8").split()[1]


def go_methods(document: ContractDocument) -> list[tuple[str, Operation]]:
    """Each operation with the name of its method on the Go Client (GoTemplate.client's)."""
    names = UniqueNames(RESERVED_METHODS)
    return [
        (names.claim(pascal("_".join(op.name_words), "Call"), ""), op)
        for op in collect_operations(document)
    ]


def generate_go_server(document: ContractDocument, module: Path) -> Path:
    """Write module/server/server.go, gofmt'd, beside the client's module; return its folder."""
    folder = module / SERVER_PACKAGE
    folder.mkdir(parents=True, exist_ok=True)
    source = GoServerTemplate(document, module_name(module)).render()
    (folder / "server.go").write_text(source, encoding="utf-8")
    gofmt(folder, "server.go")
    return folder


def gofmt(folder: Path, *names: str) -> None:
    done = subprocess.run(
        [go_tool("gofmt"), "-w", *names], cwd=folder, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise GeneratorError("go", "gofmt rejected the generated code", done.stderr)


class GoTypes:
    """The client's Go types (GoTemplate's), named from another package as api.X."""

    def __init__(self, document: ContractDocument) -> None:
        self.template = GoTemplate(document)
        self.named = set(self.template.named.values())

    def qualify(self, kind: str) -> str:
        return re.sub(
            r"(?<![\w.])([A-Z]\w*)",
            lambda m: f"api.{m.group(1)}" if m.group(1) in self.named else m.group(1),
            kind,
        )

    def parameter(self, param: Parameter) -> str:
        return str(self.template._parameter_type(param.schema))

    def body(self, op: Operation) -> str | None:
        if op.body is None:
            return None
        return self.qualify(self.template.go_type(op.body.schema)) if op.body.is_json else "[]byte"

    def result(self, op: Operation) -> str | None:
        """The type the method returns besides the error: *T, []byte, or None."""
        if op.result.media_type is None:
            return None
        if not op.result.is_json:
            return "[]byte"
        return "*" + self.qualify(self.template.go_type(op.result.schema))


def _optional(kind: str) -> str:
    """An optional field: by pointer, unless nil already means absent."""
    if kind.startswith(("[]", "map[", "*")) or kind == "json.RawMessage":
        return kind
    return "*" + kind


class GoServerTemplate:
    def __init__(self, document: ContractDocument, module: str) -> None:
        self.document = document
        self.module = module
        self.types = GoTypes(document)
        self.operations = stub_operations(document)
        by_route = {(op.route, op.method): name for name, op in go_methods(document)}
        self.go_names = {
            stub.python_name: by_route[(stub.op.route, stub.op.method)] for stub in self.operations
        }
        type_names = UniqueNames(RESERVED_TYPES)
        self.groups = {
            group: type_names.claim(name, "")
            for group, name in group_names(self.operations, "Service", RESERVED_TYPES).items()
        }
        self.requests = {
            stub.python_name: type_names.claim(self.go_names[stub.python_name] + "Request", "")
            for stub in self.operations
        }

    def signature(self, stub: StubOperation) -> str:
        name = self.go_names[stub.python_name]
        result = self.types.result(stub.op)
        returns = f"({result}, error)" if result else "error"
        return f"{name}(ctx context.Context, request {self.requests[stub.python_name]}) {returns}"

    def fields(self, stub: StubOperation) -> list[tuple[Parameter | None, str, str]]:
        """(parameter or None for the body, field name, Go type) of the request struct."""
        names = UniqueNames({"HTTPRequest"})
        fields: list[tuple[Parameter | None, str, str]] = []
        for param in stub.op.parameters:
            kind = self.types.parameter(param)
            field = names.claim(pascal(param.name, "Param"), "")
            fields.append((param, field, kind if param.required else _optional(kind)))
        body = self.types.body(stub.op)
        if body is not None:
            field = names.claim("Body", "")
            fields.append((None, field, body if stub.op.body_required else _optional(body)))
        return fields

    def render(self) -> str:
        document = self.document
        parts = [self._interfaces(), self._requests(), self._unimplemented(), self._router()]
        parts += [self._handler(stub) for stub in self.operations if stub.skip is None]
        body = "\n".join(parts)
        api = f'\tapi "{self.module}"\n' if "api." in body else ""
        keep_context = "" if self.operations else "\nvar _ context.Context\n"
        return (
            f"// Package {SERVER_PACKAGE}: {header(document, 'a net/http server stub')}\n"
            "//\n"
            "// Implement Service (or embed Unimplemented in your type and implement the\n"
            "// operations you serve; the others answer 501 Not Implemented), then serve\n"
            "// NewHandler(yourService). Keep your code in a package of your own: regenerating\n"
            "// rewrites this one.\n"
            f"package {SERVER_PACKAGE}\n\n"
            'import (\n\t"context"\n\t"encoding/json"\n\t"errors"\n\t"fmt"\n\t"io"\n'
            '\t"net/http"\n\t"net/url"\n\t"regexp"\n\t"strconv"\n\t"strings"\n\n'
            f"{api})\n{keep_context}\n{body}\n{HELPERS}"
        )

    def _interfaces(self) -> str:
        blocks = []
        for group, interface in self.groups.items():
            methods = []
            for stub in self.operations:
                if stub.group != group:
                    continue
                summary = comment_text(stub.op.summary)
                doc = f"{summary} ({comment_text(stub.label)})" if summary else stub.label
                methods.append(
                    f"\t// {self.go_names[stub.python_name]}: {comment_text(doc)}.\n"
                    f"\t{self.signature(stub)}\n"
                )
            what = "untagged operations" if group == "default" else f"operations tagged {group!r}"
            blocks.append(
                f"// {interface} holds the {comment_text(what)}.\n"
                f"type {interface} interface {{\n{''.join(methods)}}}\n"
            )
        embedded = "".join(f"\t{name}\n" for name in self.groups.values())
        blocks.append(
            "// Service is every operation of the API. A method returns what the contract\n"
            "// answers on success (sent with its status), an *HTTPError for another answer,\n"
            "// or ErrNotImplemented (501); any other error is answered 500.\n"
            f"type Service interface {{\n{embedded}}}\n"
        )
        return "\n".join(blocks)

    def _requests(self) -> str:
        blocks = []
        for stub in self.operations:
            lines = ["\t// HTTPRequest is the request as received (its headers, its context...).\n"
                     "\tHTTPRequest *http.Request\n"]  # fmt: skip
            media = stub.op.body.media_type if stub.op.body is not None else ""
            for param, field, kind in self.fields(stub):
                if param is None:
                    lines.append(f"\t// {field}: the request body ({media}).\n\t{field} {kind}\n")
                    continue
                where = f"{param.location} parameter {comment_text(param.name)!r}"
                required = "required" if param.required else "optional: nil when absent"
                lines.append(f"\t// {field}: the {where} ({required}).\n\t{field} {kind}\n")
            name = self.requests[stub.python_name]
            blocks.append(
                f"// {name} holds what {self.go_names[stub.python_name]} is asked, parsed.\n"
                f"type {name} struct {{\n{''.join(lines)}}}\n"
            )
        return "\n".join(blocks)

    def _unimplemented(self) -> str:
        methods = []
        for stub in self.operations:
            name = self.go_names[stub.python_name]
            result = self.types.result(stub.op)
            zero = "nil, " if result else ""
            label = comment_text(stub.label)
            methods.append(
                f"// {name} answers 501 Not Implemented.\n"
                f"func (Unimplemented) {self.signature(stub)} {{\n"
                f"\t// TODO: implement {name} ({label}) in your own type\n"
                f'\treturn {zero}fmt.Errorf("{name} ({_go_text(label)}): %w", '
                "ErrNotImplemented)\n}\n"
            )
        return (
            "// Unimplemented answers 501 Not Implemented to every operation: embed it in your\n"
            "// type and implement the operations you serve.\n"
            "type Unimplemented struct{}\n\n"
            "var _ Service = Unimplemented{}\n\n" + "\n".join(methods)
        )

    def _router(self) -> str:
        entries = []
        for stub in routing_order(self.operations):
            pattern, _ = route_pattern(stub.op.route)
            entries.append(
                f"\t{{{_go_string(stub.op.method.upper())}, "
                f"regexp.MustCompile({_go_string(pattern)}), "
                f"(*handler).handle{self.go_names[stub.python_name]}}},\n"
            )
        skipped = "".join(
            f"// Not routed: {self.go_names[s.python_name]} ({comment_text(s.label)}): {s.skip}.\n"
            for s in self.operations
            if s.skip
        )
        return f"{skipped}var routes = []route{{\n{''.join(entries)}}}\n"

    def _handler(self, stub: StubOperation) -> str:
        op = stub.op
        name = self.go_names[stub.python_name]
        _, path_names = route_pattern(op.route)
        lines = [
            f"\tvar request {self.requests[stub.python_name]}\n",
            "\trequest.HTTPRequest = r\n",
        ]
        if any(p.location == "query" for p in op.parameters):
            lines.append("\tquery := r.URL.Query()\n")
        for param, field, kind in self.fields(stub):
            if param is None:
                lines.append(self._read_body(field, op))
                continue
            lines.append(self._read_parameter(param, field, kind, path_names))
        result = self.types.result(op)
        call = f"h.service.{name}(r.Context(), request)"
        if result is None:
            lines.append(
                f"\tif err := {call}; err != nil {{\n\t\twriteError(w, err)\n\t\treturn\n\t}}\n"
                f"\tw.WriteHeader({stub.status})\n"
            )
        else:
            lines.append(
                f"\tresult, err := {call}\n\tif err != nil {{\n\t\twriteError(w, err)\n"
                "\t\treturn\n\t}\n"
            )
            if result == "[]byte":
                media = _go_string(op.result.media_type or "application/octet-stream")
                lines.append(f"\twriteBytes(w, {stub.status}, {media}, result)\n")
            else:
                lines.append(f"\twriteJSON(w, {stub.status}, result)\n")
        return (
            f"func (h *handler) handle{name}(w http.ResponseWriter, r *http.Request, "
            f"path []string) {{\n{''.join(lines)}}}\n"
        )

    def _read_parameter(
        self, param: Parameter, field: str, kind: str, path_names: list[str]
    ) -> str:
        label = _go_text(f"{param.location} parameter {param.name!r}")
        kind = self.types.parameter(param)  # the field's type is *kind when optional
        if param.location == "path":
            index = path_names.index(param.name) if param.name in path_names else -1
            if index < 0:
                return f"\t// {comment_text(param.name)}: not in the route; left empty\n"
            source = f"[]string{{path[{index}]}}"
        elif param.location == "query":
            source = f"query[{_go_string(param.name)}]"
        else:
            source = f"r.Header.Values({_go_string(param.name)})"
        base = kind.removeprefix("[]")
        parser = PARSERS.get(base, "parseString")
        if kind.startswith("[]"):
            raws = "splitComma(raws)" if param.location != "query" else "raws"
            parse = f"parseList({raws}, {parser})"
        else:
            parse = f"{parser}(raws[0])"
        assign = "value" if param.required or kind.startswith("[]") else "&value"
        missing = (
            f' else {{\n\t\twriteProblem(w, http.StatusBadRequest, "missing {label}")\n'
            "\t\treturn\n\t}"
            if param.required
            else ""
        )
        return (
            f"\tif raws := {source}; len(raws) > 0 {{\n"
            f"\t\tvalue, err := {parse}\n"
            "\t\tif err != nil {\n"
            f'\t\t\twriteProblem(w, http.StatusBadRequest, "{label}: "+err.Error())\n'
            "\t\t\treturn\n\t\t}\n"
            f"\t\trequest.{field} = {assign}\n"
            f"\t}}{missing}\n"
        )

    def _read_body(self, field: str, op: Operation) -> str:
        required = op.body_required
        if op.body is not None and op.body.is_json:
            return (
                f"\tif err := decodeJSON(r, &request.{field}, {str(required).lower()}); "
                "err != nil {\n"
                '\t\twriteProblem(w, http.StatusBadRequest, "body: "+err.Error())\n'
                "\t\treturn\n\t}\n"
            )
        missing = (
            '\tif len(body) == 0 {\n\t\twriteProblem(w, http.StatusBadRequest, "missing body")\n'
            "\t\treturn\n\t}\n"
            if required
            else ""
        )
        return (
            "\tbody, err := io.ReadAll(r.Body)\n\tif err != nil {\n"
            '\t\twriteProblem(w, http.StatusBadRequest, "body: "+err.Error())\n'
            f"\t\treturn\n\t}}\n{missing}\trequest.{field} = body\n"
        )


def _go_text(text: str) -> str:
    """Text for inside a Go string literal that is already quoted."""
    return _go_string(text)[1:-1]


HELPERS = """
// ErrNotImplemented is returned by every Unimplemented method: answered 501.
var ErrNotImplemented = errors.New("not implemented")

// HTTPError makes a handler answer Status with Body (JSON, or raw when Body is []byte).
type HTTPError struct {
	Status int
	Body   any
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("status %d", e.Status)
}

// NewHandler serves the API from service. Routes are relative to the server's base
// path: mount it with http.StripPrefix to serve them under one.
func NewHandler(service Service) http.Handler {
	return &handler{service: service}
}

type handler struct {
	service Service
}

type route struct {
	method  string
	pattern *regexp.Regexp
	handle  func(h *handler, w http.ResponseWriter, r *http.Request, path []string)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	escaped := r.URL.EscapedPath()
	var allowed []string
	for _, candidate := range routes {
		match := candidate.pattern.FindStringSubmatch(escaped)
		if match == nil {
			continue
		}
		if candidate.method != r.Method {
			allowed = append(allowed, candidate.method)
			continue
		}
		values := make([]string, len(match)-1)
		for i, raw := range match[1:] {
			value, err := url.PathUnescape(raw)
			if err != nil {
				writeProblem(w, http.StatusBadRequest, "path: "+err.Error())
				return
			}
			values[i] = value
		}
		candidate.handle(h, w, r, values)
		return
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeProblem(w, http.StatusMethodNotAllowed, r.Method+" is not an operation of "+escaped)
		return
	}
	writeProblem(w, http.StatusNotFound, "no operation at "+escaped)
}

func parseString(raw string) (string, error) { return raw, nil }

func parseInt64(raw string) (int64, error) { return strconv.ParseInt(raw, 10, 64) }

func parseFloat64(raw string) (float64, error) { return strconv.ParseFloat(raw, 64) }

func parseBool(raw string) (bool, error) { return strconv.ParseBool(raw) }

func parseList[T any](raws []string, parse func(string) (T, error)) ([]T, error) {
	values := make([]T, 0, len(raws))
	for _, raw := range raws {
		value, err := parse(raw)
		if err != nil {
			return nil, err
		}
		values = append(values, value)
	}
	return values, nil
}

func splitComma(raws []string) []string {
	var parts []string
	for _, raw := range raws {
		parts = append(parts, strings.Split(raw, ",")...)
	}
	return parts
}

func decodeJSON(r *http.Request, into any, required bool) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		if required {
			return errors.New("missing")
		}
		return nil
	}
	return json.Unmarshal(data, into)
}

func writeJSON(w http.ResponseWriter, status int, value any) {
	data, err := json.Marshal(value)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func writeBytes(w http.ResponseWriter, status int, contentType string, data []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func writeProblem(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]string{"error": message})
}

func writeError(w http.ResponseWriter, err error) {
	var answer *HTTPError
	switch {
	case errors.As(err, &answer):
		if data, ok := answer.Body.([]byte); ok {
			writeBytes(w, answer.Status, "application/octet-stream", data)
			return
		}
		writeJSON(w, answer.Status, answer.Body)
	case errors.Is(err, ErrNotImplemented):
		writeProblem(w, http.StatusNotImplemented, "Not Implemented: "+err.Error())
	default:
		writeProblem(w, http.StatusInternalServerError, err.Error())
	}
}
"""


# ---------------------------------------------------------------------------------------
# Programs the checks build (stub_check.py), never written into the output


def unimplemented_main(document: ContractDocument, module: str) -> str:
    return (
        'package main\n\nimport (\n\t"net/http"\n\t"os"\n\n'
        f'\t"{module}/{SERVER_PACKAGE}"\n)\n\n'
        "func main() {\n"
        f"\t_ = http.ListenAndServe(os.Args[1], "
        f"{SERVER_PACKAGE}.NewHandler({SERVER_PACKAGE}.Unimplemented{{}}))\n"
        "}\n"
    )


def example_service_main(document: ContractDocument, module: str) -> str:
    """A Service whose every method answers the contract's example for it."""
    template = GoServerTemplate(document, module)
    methods = []
    for stub in template.operations:
        if stub.skip:
            continue
        result = template.types.result(stub.op)
        signature = template.signature(stub).replace("request ", f"request {SERVER_PACKAGE}.", 1)
        if result is None:
            body = "\treturn nil\n"
        elif result == "[]byte":
            value = response_example(document, stub)
            text = value if isinstance(value, str) else json_text(value)
            body = f"\treturn []byte({_go_string(text)}), nil\n"
        else:
            value = response_example(document, stub)
            body = (
                f"\tvar out {result[1:]}\n"
                f"\tif err := json.Unmarshal([]byte({_go_string(json_text(value))}), &out); "
                "err != nil {\n\t\treturn nil, err\n\t}\n\treturn &out, nil\n"
            )
        methods.append(f"func (examples) {signature} {{\n{body}}}\n")
    source = "\n".join(methods)
    imports = ['"net/http"', '"os"']
    if "context." in source:
        imports.insert(0, '"context"')
    if "json." in source:
        imports.insert(0, '"encoding/json"')
    local = [f'"{module}/{SERVER_PACKAGE}"']
    if "api." in source:
        local.insert(0, f'api "{module}"')
    return (
        "package main\n\nimport (\n"
        + "".join(f"\t{i}\n" for i in imports)
        + "\n"
        + "".join(f"\t{i}\n" for i in local)
        + ")\n\n"
        f"type examples struct{{ {SERVER_PACKAGE}.Unimplemented }}\n\n{source}\n"
        "func main() {\n"
        f"\t_ = http.ListenAndServe(os.Args[1], {SERVER_PACKAGE}.NewHandler(examples{{}}))\n"
        "}\n"
    )


def json_text(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))
