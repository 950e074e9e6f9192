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
  scope?: string;
}

/**
 * Whether a setting is `machine` scoped: where the API key goes, which variable holds it,
 * what runs and where files are written. A repository's settings must not choose these
 * (the server's MACHINE_SETTINGS, docs/settings.md).
 */
export function isMachineSetting(schema: PropertySchema): boolean {
  return schema.scope === "machine";
}

/**
 * A setting's value as the user's (or, in a remote window, the remote machine's) settings
 * give it, for a machine setting: never a workspace's or folder's value. VS Code already
 * ignores those for `machine` settings; reading `globalValue` keeps it so whatever the
 * scope asked for.
 */
function machineValue(config: vscode.WorkspaceConfiguration, key: string): JsonValue {
  const inspected = config.inspect<JsonValue>(key);
  return inspected?.globalValue ?? inspected?.defaultValue ?? null;
}

/** The environment variable that the API key from VS Code's secret storage goes in. */
export function apiKeyVariable(): string {
  const variable = machineValue(vscode.workspace.getConfiguration(SECTION), "backend.apiKeyEnv");
  return typeof variable === "string" && variable !== "" ? variable : "HEADSTART_API_KEY";
}

/** One `contributes.configuration` entry: a category of the Settings editor. */
interface ConfigurationSection {
  properties?: Record<string, PropertySchema>;
}

/**
 * The contributed keys the server reads, without the `headstart.` prefix, and their schemas,
 * over every category (`contributes.configuration` is a list of them, or one object).
 */
export function serverKeys(packageJson: unknown): Map<string, PropertySchema> {
  const configuration = (
    packageJson as { contributes?: { configuration?: ConfigurationSection | ConfigurationSection[] } }
  ).contributes?.configuration;
  const sections = Array.isArray(configuration) ? configuration : configuration ? [configuration] : [];
  const keys = new Map<string, PropertySchema>();
  for (const section of sections) {
    for (const [name, schema] of Object.entries(section.properties ?? {})) {
      const key = name.slice(SECTION.length + 1);
      if (!CLIENT_ONLY.some((prefix) => key === prefix || (prefix.endsWith(".") && key.startsWith(prefix)))) {
        keys.set(key, schema);
      }
    }
  }
  return keys;
}

/**
 * The server's settings as one nested object with every key (defaults included), so that a
 * value set back to its default replaces the one the server had. An empty string in a
 * setting that may be null means null ("not set"). Machine settings are the user's alone.
 */
export function serverSettings(keys: Map<string, PropertySchema>, scope?: vscode.Uri): JsonObject {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const settings: JsonObject = {};
  for (const [key, schema] of keys) {
    let value = isMachineSetting(schema) ? machineValue(config, key) : (config.get<JsonValue>(key) ?? null);
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
  const envValue = machineValue(config, "server.env");
  const env =
    envValue !== null && typeof envValue === "object" && !Array.isArray(envValue)
      ? (envValue as Record<string, string>)
      : {};
  const commandValue = machineValue(config, "server.command");
  const commandLine = (Array.isArray(commandValue) ? commandValue : []).filter(
    (part): part is string => typeof part === "string" && part !== "",
  );
  const [command, ...args] = commandLine;
  if (command !== undefined) {
    return { command, args, env };
  }
  const pythonValue = machineValue(config, "server.pythonPath");
  const python = (typeof pythonValue === "string" ? pythonValue : "").trim();
  if (python !== "") {
    return { command: python, args: ["-m", "server", "serve"], env };
  }
  return { command: "headstart", args: ["serve"], env };
}
