"""The TypeScript server stub: plain node:http over the types openapi-ts already wrote.

    typescript/server/index.ts   an interface per operation group (first tag) and
                                 `Handlers` extending them all, each method typed by
                                 openapi-ts's <Operation>Data (path, query, headers, body)
                                 and <Operation>Responses; `notImplemented` (every method
                                 throws NotImplementedError: 501); createHandler(handlers)
                                 for http.createServer, createApiServer(handlers)

node:http rather than a framework: the stub then needs nothing at run time (Express,
Fastify or Hono would each be a dependency and a version to pin, and each types its
requests its own way), it mirrors the Go stub, and its handlers are plain async functions
that move to any framework unchanged. The router is a table of anchored regexps,
literal segments tried before templated ones; parameters are read into the types the
document declares (numbers, booleans, arrays) and JSON bodies parsed; answers are the
contract's success status with the handler's value as JSON. Type-checking it needs
@types/node (a devDependency of the generated package.json).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from server.aiapi.document import ContractDocument
from server.aiapi.naming import UniqueNames, camel, comment_text
from server.aiapi.operations import is_json_media, schema_types
from server.aiapi.python_client import header
from server.aiapi.stub_operations import (
    StubOperation,
    group_names,
    route_pattern,
    routing_order,
    stub_operations,
)

TYPES_NODE_RANGE = "^20.19.39"
VITEST_RANGE = "^4.1.12"


class SdkFunction:
    def __init__(self, name: str, data: str | None, responses: str | None) -> None:
        self.name = name
        self.data = data
        self.responses = responses


def sdk_functions(source: Path) -> dict[tuple[str, str], SdkFunction]:
    """(method, route) -> the function openapi-ts wrote in sdk.gen.ts, with the names of its
    <Operation>Data and <Operation>Responses types."""
    text = (source / "sdk.gen.ts").read_text(encoding="utf-8")
    found: dict[tuple[str, str], SdkFunction] = {}
    for chunk in re.split(r"\nexport const ", text)[1:]:
        name = re.match(r"\w+", chunk)
        data = re.search(r"Options<(\w+), ThrowOnError>", chunk)
        call = re.search(r"\)\.(?:sse\.)?(\w+)<\s*([\w]+)\s*,", chunk)
        url = re.search(r"\burl: (\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')", chunk)
        if not (name and call and url):
            continue
        route = url.group(1)
        route = json.loads(route) if route.startswith('"') else route[1:-1].replace("\\'", "'")
        responses = call.group(2) if call.group(2) != "unknown" else None
        found.setdefault(
            (call.group(1).lower(), route),
            SdkFunction(name.group(0), data.group(1) if data else None, responses),
        )
    return found


def generate_typescript_server(document: ContractDocument, out: Path) -> Path:
    """Write out/server/index.ts beside openapi-ts's src/; return the folder."""
    folder = out / "server"
    folder.mkdir(parents=True, exist_ok=True)
    template = TypeScriptServerTemplate(document, sdk_functions(out / "src"))
    (folder / "index.ts").write_text(template.render(), encoding="utf-8")
    add_to_package(out, "server")
    return folder


def add_to_package(out: Path, part: str) -> None:
    """package.json and tsconfig.json of the client, widened to `part` (server/ or tests/):
    Node's types and vitest as devDependencies, the folder in tsconfig's include."""
    package_path = out / "package.json"
    package = json.loads(package_path.read_text(encoding="utf-8"))
    dev = dict(package.get("devDependencies") or {})
    dev["@types/node"] = TYPES_NODE_RANGE
    if part == "tests":
        dev["vitest"] = VITEST_RANGE
        package["scripts"] = {**(package.get("scripts") or {}), "test": "vitest run"}
    package["devDependencies"] = dict(sorted(dev.items()))
    package_path.write_text(json.dumps(package, indent=2) + "\n", encoding="utf-8")
    config_path = out / "tsconfig.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    include = list(config.get("include") or ["src/**/*.ts"])
    if f"{part}/**/*.ts" not in include:
        include.append(f"{part}/**/*.ts")
    config["include"] = include
    options = dict(config.get("compilerOptions") or {})
    options["types"] = ["node"]
    config["compilerOptions"] = options
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def parameter_kind(document: ContractDocument, schema: Any) -> tuple[str, bool]:
    """How a parameter's text is read (integer, number, boolean or string) and whether it
    is an array."""
    schema = document.resolve(schema)
    if not isinstance(schema, dict):
        return "string", False
    declared, _ = schema_types(schema)
    if declared == "array":
        inner = document.resolve(schema.get("items"))
        kind = schema_types(inner)[0] if isinstance(inner, dict) else None
        return (kind if kind in ("integer", "number", "boolean") else "string"), True
    return (declared if declared in ("integer", "number", "boolean") else "string"), False


class TypeScriptServerTemplate:
    def __init__(
        self, document: ContractDocument, functions: dict[tuple[str, str], SdkFunction]
    ) -> None:
        self.document = document
        self.operations = stub_operations(document)
        names = UniqueNames({"Handlers", "notImplemented", "createHandler", "createApiServer"})
        self.functions: dict[str, SdkFunction] = {}
        for stub in self.operations:
            found = functions.get((stub.op.method, stub.op.route))
            if found is None:  # openapi-ts wrote no function: name it as it would
                found = SdkFunction(camel("_".join(stub.op.name_words), "call"), None, None)
            self.functions[stub.python_name] = SdkFunction(
                names.claim(found.name, ""), found.data, found.responses
            )
        self.groups = group_names(self.operations, "Handlers", {"Handlers"})

    def method_type(self, stub: StubOperation) -> str:
        function = self.functions[stub.python_name]
        data = function.data or "unknown"
        if stub.op.result.media_type is None:
            result = "void"
        elif function.responses:
            result = f"Success<{function.responses}>"
        else:
            result = "unknown"
        return f"(input: Input<{data}>) => Promise<{result}>"

    def render(self) -> str:
        document = self.document
        type_names = sorted(
            {n for f in self.functions.values() for n in (f.data, f.responses) if n}
        )
        imports = (
            f'import type {{ {", ".join(type_names)} }} from "../src/types.gen";\n'
            if type_names
            else ""
        )
        interfaces = []
        for group, name in self.groups.items():
            members = []
            for stub in self.operations:
                if stub.group != group:
                    continue
                summary = comment_text(stub.op.summary)
                label = comment_text(stub.label).replace("*/", "* /")
                doc = f"{summary} ({label})" if summary else label
                function = self.functions[stub.python_name]
                members.append(f"  /** {doc} */\n  {function.name}: {self.method_type(stub)};\n")
            what = "untagged operations" if group == "default" else f"operations tagged {group!r}"
            interfaces.append(
                f"/** The {comment_text(what)}. */\n"
                f"export interface {name} {{\n{''.join(members)}}}\n"
            )
        extends = ", ".join(self.groups.values())
        handlers = "/** Every operation of the API. */\n" + (
            f"export interface Handlers extends {extends} {{}}\n"
            if extends
            else "export type Handlers = Record<never, never>;\n"
        )
        defaults = "".join(
            f"  // TODO: implement {self.functions[s.python_name].name}\n"
            f"  {self.functions[s.python_name].name}: () => Promise.reject(new NotImplementedError("
            f"{json.dumps(self.functions[s.python_name].name + ' (' + s.label + ')')})),\n"
            for s in self.operations
        )
        table = "".join(self._route(stub) for stub in routing_order(self.operations))
        skipped = "".join(
            f"// Not routed: {self.functions[s.python_name].name} "
            f"({comment_text(s.label)}): {s.skip}.\n"
            for s in self.operations
            if s.skip
        )
        return (
            f"// {header(document, 'A node:http server stub')}\n"
            "//\n"
            "// Implement the operations you serve and pass them to createHandler (or\n"
            "// createApiServer); every other operation answers 501 Not Implemented. Keep your\n"
            "// code in a module of your own: regenerating rewrites this one.\n\n"
            "import {\n  createServer,\n  type IncomingMessage,\n  type Server,\n"
            '  type ServerResponse,\n} from "node:http";\n\n'
            f"{imports}\n{PRELUDE}\n{''.join(interfaces)}\n{handlers}\n"
            "/** The operations as generated: each one answers 501 Not Implemented. */\n"
            f"export const notImplemented: Handlers = {{\n{defaults}}};\n\n"
            f"{skipped}const routes: Route[] = [\n{table}];\n\n{ROUTER}"
        )

    def _route(self, stub: StubOperation) -> str:
        op = stub.op
        pattern, names = route_pattern(op.route)
        parameters = []
        for param in op.parameters:
            kind, array = parameter_kind(self.document, param.schema)
            parameters.append(
                f"{{ name: {json.dumps(param.name)}, in: {json.dumps(param.location)}, "
                f"kind: {json.dumps(kind)}, array: {str(array).lower()}, "
                f"required: {str(param.required).lower()} }}"
            )
        body = "none"
        if op.body is not None:
            media = op.body.media_type or ""
            if is_json_media(media):
                body = "json"
            elif media.startswith("text/"):
                body = "text"
            elif media.split(";")[0].strip() == "application/x-www-form-urlencoded":
                body = "form"
            else:
                body = "blob"
        result = "none"
        if op.result.media_type is not None:
            result = "json" if op.result.is_json else "raw"
        return (
            f"  {{\n    method: {json.dumps(op.method.upper())},\n"
            f"    pattern: new RegExp({json.dumps(pattern)}),\n"
            f"    path: {json.dumps(names)},\n"
            f"    handler: {json.dumps(self.functions[stub.python_name].name)},\n"
            f"    parameters: [{', '.join(parameters)}],\n"
            f"    body: {json.dumps(body)},\n"
            f"    bodyRequired: {str(op.body_required).lower()},\n"
            f"    status: {stub.status},\n"
            f"    result: {json.dumps(result)},\n"
            f"    mediaType: {json.dumps(op.result.media_type or '')},\n  }},\n"
        )


PRELUDE = """/** A handler's input: its parameters and body as openapi-ts types them, and the
 * request as received. */
export type Input<TData> = {
  path: Field<TData, "path">;
  query: Field<TData, "query">;
  headers: Field<TData, "headers">;
  body: Field<TData, "body">;
  request: IncomingMessage;
};

type Field<TData, TKey extends string> = TData extends { [key in TKey]?: infer TValue }
  ? TValue
  : undefined;

/** What a handler answers on success: one of the contract's 2xx answers. */
export type Success<TResponses> = TResponses[keyof TResponses];

/** Throw it from a handler to answer `status` with `body` (JSON). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body?: unknown,
  ) {
    super(`status ${status}`);
  }
}

/** What every operation of notImplemented throws: answered 501. */
export class NotImplementedError extends Error {}
"""

ROUTER = r"""type Parameter = {
  name: string;
  in: "path" | "query" | "header";
  kind: "string" | "integer" | "number" | "boolean";
  array: boolean;
  required: boolean;
};

type Route = {
  method: string;
  pattern: RegExp;
  path: string[];
  handler: keyof Handlers;
  parameters: Parameter[];
  body: "none" | "json" | "text" | "form" | "blob";
  bodyRequired: boolean;
  status: number;
  result: "none" | "json" | "raw";
  mediaType: string;
};

class BadRequest extends Error {}

/** Options of createHandler: a base path the routes are served under ("/v1"). */
export type HandlerOptions = { basePath?: string };

/** A request listener for http.createServer; missing handlers answer 501. */
export function createHandler(
  handlers: Partial<Handlers> = {},
  options: HandlerOptions = {},
): (request: IncomingMessage, response: ServerResponse) => void {
  const impl: Handlers = { ...notImplemented, ...handlers };
  const basePath = (options.basePath ?? "").replace(/\/$/, "");
  return (request, response) => {
    serve(impl, basePath, request, response).catch((error: unknown) =>
      answerError(response, error),
    );
  };
}

/** An http.Server for the API; call listen() on it. */
export function createApiServer(
  handlers: Partial<Handlers> = {},
  options: HandlerOptions = {},
): Server {
  return createServer(createHandler(handlers, options));
}

async function serve(
  impl: Handlers,
  basePath: string,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const url = new URL(request.url ?? "/", "http://localhost");
  let path = url.pathname;
  if (basePath) {
    if (path !== basePath && !path.startsWith(basePath + "/")) {
      return answerJson(response, 404, { error: `no operation at ${path}` });
    }
    path = path.slice(basePath.length) || "/";
  }
  const allowed: string[] = [];
  for (const route of routes) {
    const match = route.pattern.exec(path);
    if (match === null) continue;
    if (route.method !== request.method) {
      allowed.push(route.method);
      continue;
    }
    let input: Input<unknown>;
    try {
      input = await readInput(route, match, url, request);
    } catch (error) {
      if (error instanceof BadRequest) return answerJson(response, 400, { error: error.message });
      throw error;
    }
    const handler = impl[route.handler] as unknown as (input: Input<unknown>) => Promise<unknown>;
    const result = await handler.call(impl, input);
    return answer(response, route, result);
  }
  if (allowed.length > 0) {
    response.setHeader("Allow", allowed.join(", "));
    return answerJson(response, 405, { error: `${request.method} is not an operation of ${path}` });
  }
  answerJson(response, 404, { error: `no operation at ${path}` });
}

async function readInput(
  route: Route,
  match: RegExpExecArray,
  url: URL,
  request: IncomingMessage,
): Promise<Input<unknown>> {
  const groups: Record<string, Record<string, unknown>> = { path: {}, query: {}, header: {} };
  for (const parameter of route.parameters) {
    let raws: string[];
    if (parameter.in === "path") {
      const index = route.path.indexOf(parameter.name);
      raws = index >= 0 ? [decodeURIComponent(match[index + 1] ?? "")] : [];
    } else if (parameter.in === "query") {
      raws = url.searchParams.getAll(parameter.name);
    } else {
      const value = request.headers[parameter.name.toLowerCase()];
      raws = value === undefined ? [] : Array.isArray(value) ? value : [value];
    }
    if (parameter.array && parameter.in !== "query") raws = raws.flatMap((raw) => raw.split(","));
    if (raws.length === 0) {
      if (parameter.required) {
        throw new BadRequest(`missing ${parameter.in} parameter ${parameter.name}`);
      }
      continue;
    }
    const values = raws.map((raw) => readValue(parameter, raw));
    groups[parameter.in][parameter.name] = parameter.array ? values : values[0];
  }
  const body = await readBody(route, request);
  return {
    path: groups.path,
    query: groups.query,
    headers: groups.header,
    body,
    request,
  } as unknown as Input<unknown>;
}

function readValue(parameter: Parameter, raw: string): unknown {
  if (parameter.kind === "integer" || parameter.kind === "number") {
    const value = Number(raw);
    const whole = parameter.kind === "number" || Number.isInteger(value);
    if (raw.trim() === "" || Number.isNaN(value) || !whole) {
      const what = `${parameter.in} parameter ${parameter.name}`;
      throw new BadRequest(`${what}: not a ${parameter.kind}: ${raw}`);
    }
    return value;
  }
  if (parameter.kind === "boolean") {
    if (raw !== "true" && raw !== "false") {
      throw new BadRequest(`${parameter.in} parameter ${parameter.name}: not a boolean: ${raw}`);
    }
    return raw === "true";
  }
  return raw;
}

async function readBody(route: Route, request: IncomingMessage): Promise<unknown> {
  if (route.body === "none") return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const data = Buffer.concat(chunks);
  if (data.length === 0) {
    if (route.bodyRequired) throw new BadRequest("missing body");
    return undefined;
  }
  if (route.body === "json") {
    try {
      return JSON.parse(data.toString("utf8"));
    } catch {
      throw new BadRequest("body: not JSON");
    }
  }
  if (route.body === "text") return data.toString("utf8");
  if (route.body === "form") return Object.fromEntries(new URLSearchParams(data.toString("utf8")));
  return new Blob([data]);
}

async function answer(response: ServerResponse, route: Route, result: unknown): Promise<void> {
  if (route.result === "none" || result === undefined) {
    response.writeHead(route.status).end();
  } else if (route.result === "json") {
    answerJson(response, route.status, result);
  } else {
    const data =
      result instanceof Blob
        ? Buffer.from(await result.arrayBuffer())
        : typeof result === "string" || result instanceof Uint8Array
          ? result
          : JSON.stringify(result);
    response.writeHead(route.status, { "Content-Type": route.mediaType }).end(data);
  }
}

function answerJson(response: ServerResponse, status: number, value: unknown): void {
  response.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(value));
}

function answerError(response: ServerResponse, error: unknown): void {
  if (response.headersSent) {
    response.end();
  } else if (error instanceof HttpError) {
    answerJson(response, error.status, error.body ?? null);
  } else if (error instanceof NotImplementedError) {
    answerJson(response, 501, { error: `Not Implemented: ${error.message}` });
  } else {
    answerJson(response, 500, { error: error instanceof Error ? error.message : String(error) });
  }
}
"""
