/**
 * The settings: which of the contributed `headstart.*` keys belong to the server, the
 * object the server gets, and the command line that starts it.
 *
 * The server's keys are read from the extension's own package.json, so that the list of
 * settings lives in one place; tests/test_vscode_settings.py checks that list against the
 * server's pydantic model.
 */
import * as vscode from "vscode";

export const SECTION = "headstart";

/** Keys only the extension reads; the server rejects unknown keys, so they never go there. */
const CLIENT_ONLY = ["enable", "server.", "trace."];

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = Record<string, JsonValue>;

interface PropertySchema {
  type?: string | string[];
}

/** The contributed keys the server reads, without the `headstart.` prefix, and their schemas. */
export function serverKeys(packageJson: unknown): Map<string, PropertySchema> {
  const properties = (
    packageJson as { contributes?: { configuration?: { properties?: Record<string, PropertySchema> } } }
  ).contributes?.configuration?.properties;
  const keys = new Map<string, PropertySchema>();
  for (const [name, schema] of Object.entries(properties ?? {})) {
    const key = name.slice(SECTION.length + 1);
    if (!CLIENT_ONLY.some((prefix) => key === prefix || (prefix.endsWith(".") && key.startsWith(prefix)))) {
      keys.set(key, schema);
    }
  }
  return keys;
}

/**
 * The server's settings as one nested object with every key (defaults included), so that a
 * value set back to its default replaces the one the server had. An empty string in a
 * setting that may be null means null ("not set").
 */
export function serverSettings(keys: Map<string, PropertySchema>, scope?: vscode.Uri): JsonObject {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const settings: JsonObject = {};
  for (const [key, schema] of keys) {
    let value = config.get<JsonValue>(key) ?? null;
    const nullable = Array.isArray(schema.type) && schema.type.includes("null");
    if (nullable && typeof value === "string" && value.trim() === "") {
      value = null;
    }
    const path = key.split(".");
    let node = settings;
    for (const part of path.slice(0, -1)) {
      const child = node[part];
      node = child !== null && typeof child === "object" && !Array.isArray(child) ? child : (node[part] = {});
    }
    node[path[path.length - 1] ?? key] = value;
  }
  return settings;
}

export interface ServerLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** How to start the server: `server.command`, else `<server.pythonPath> -m server serve`, else `headstart serve`. */
export function serverLaunch(): ServerLaunch {
  const config = vscode.workspace.getConfiguration(SECTION);
  const env = config.get<Record<string, string>>("server.env") ?? {};
  const commandLine = (config.get<string[]>("server.command") ?? []).filter((part) => part !== "");
  const [command, ...args] = commandLine;
  if (command !== undefined) {
    return { command, args, env };
  }
  const python = (config.get<string>("server.pythonPath") ?? "").trim();
  if (python !== "") {
    return { command: python, args: ["-m", "server", "serve"], env };
  }
  return { command: "headstart", args: ["serve"], env };
}
