/**
 * Headstart for VS Code: starts `headstart serve`, hands it the settings, and lets
 * vscode-languageclient turn its `textDocument/inlineCompletion` answers into ghost text.
 */
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  State,
  WorkDoneProgressCancelNotification,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
} from "vscode-languageclient/node";

import { NotificationProgress } from "./progress";
import { SECTION, apiKeyVariable, isMachineSetting, serverKeys, serverLaunch, serverSettings } from "./settings";
import { StatusBar, type BackendStatus, type ServerState } from "./statusBar";

const STATUS_NOTIFICATION = "$/headstart/status";
const API_KEY_SECRET = "headstart.apiKey";

/** Code actions of this kind (or under it) are what the refactor command offers. */
const REFACTOR_KIND = "refactor";

/** The kind of the server's actions that generate code from an OpenAPI document (docs/aiapi.md). */
const GENERATE_KIND = "source.headstart.generate";

/** The server's command behind "rewrite with an instruction": the client asks for the text. */
const REWRITE_COMMAND = "headstart.rewrite";

/** Commands for one kind of the server's refactorings each (README: "Refactor code actions"). */
const REFACTORINGS: Record<string, string> = {
  "headstart.addDocstring": "refactor.rewrite.docstring",
  "headstart.addTypeHints": "refactor.rewrite.typeHints",
  "headstart.extractFunction": "refactor.extract.function",
  "headstart.rewriteWithInstruction": "refactor.rewrite.instruction",
};

let headstart: Headstart | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  headstart = new Headstart(context);
  await headstart.start();
}

export async function deactivate(): Promise<void> {
  await headstart?.stop();
  headstart = undefined;
}

class Headstart {
  private client: LanguageClient | undefined;
  private readonly output: vscode.LogOutputChannel;
  private readonly status: StatusBar;
  private readonly notifications: NotificationProgress;
  private readonly keys: ReturnType<typeof serverKeys>;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel("Headstart", { log: true });
    this.status = new StatusBar("headstart.showMenu");
    this.status.setEnabled(this.enabled());
    this.notifications = new NotificationProgress((token) => {
      void this.client?.sendNotification(WorkDoneProgressCancelNotification.type, { token });
    });
    this.keys = serverKeys(context.extension.packageJSON);
    const command = (name: string, run: (...args: unknown[]) => unknown): vscode.Disposable =>
      vscode.commands.registerCommand(name, run);
    context.subscriptions.push(
      this.output,
      this.status,
      this.notifications,
      command("headstart.enable", () => this.setEnabled(true)),
      command("headstart.disable", () => this.setEnabled(false)),
      command("headstart.restartServer", () => this.restart()),
      command("headstart.showLog", () => {
        this.output.show(true);
      }),
      command("headstart.refactor", (args) => this.refactor(args)),
      command("headstart.addDocstring", () => this.refactor({ kind: REFACTORINGS["headstart.addDocstring"] })),
      command("headstart.addTypeHints", () => this.refactor({ kind: REFACTORINGS["headstart.addTypeHints"] })),
      command("headstart.extractFunction", () =>
        this.refactor({ kind: REFACTORINGS["headstart.extractFunction"] }),
      ),
      command("headstart.rewriteWithInstruction", () =>
        this.refactor({ kind: REFACTORINGS["headstart.rewriteWithInstruction"] }),
      ),
      command("headstart.generateFromOpenApi", () => this.generateFromOpenApi()),
      command("headstart.setApiKey", () => this.setApiKey()),
      command("headstart.showMenu", () => this.showMenu()),
      vscode.workspace.onDidChangeConfiguration((event) => this.configurationChanged(event)),
    );
  }

  enabled(): boolean {
    return vscode.workspace.getConfiguration(SECTION).get<boolean>("enable") ?? true;
  }

  async start(): Promise<void> {
    const launch = serverLaunch();
    const env: Record<string, string> = { ...(process.env as Record<string, string>), ...launch.env };
    const apiKey = await this.context.secrets.get(API_KEY_SECRET);
    if (apiKey) {
      env[apiKeyVariable()] = apiKey;
    }
    const serverOptions: ServerOptions = { command: launch.command, args: launch.args, options: { env } };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      initializationOptions: () => serverSettings(this.keys),
      outputChannel: this.output,
      middleware: this.middleware(),
    };
    const client = new LanguageClient("headstart", "Headstart", serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((event) => {
      this.status.setServer(serverState(event.newState));
    });
    client.onNotification(STATUS_NOTIFICATION, (params: BackendStatus) => {
      this.status.setBackend(params);
    });
    this.status.setServer("starting");
    this.output.info(`starting the server: ${[launch.command, ...launch.args].join(" ")}`);
    try {
      await client.start();
    } catch (error) {
      this.status.setServer("stopped");
      const message = error instanceof Error ? error.message : String(error);
      this.output.error(`the server did not start: ${message}`);
      void vscode.window
        .showErrorMessage(`Headstart: the server did not start (${message}).`, "Open Settings", "Show Log")
        .then((choice) => {
          if (choice === "Open Settings") {
            void vscode.commands.executeCommand("workbench.action.openSettings", "headstart.server");
          } else if (choice === "Show Log") {
            this.output.show(true);
          }
        });
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) {
      return;
    }
    try {
      if (client.isRunning()) {
        await client.stop(5000);
      }
    } catch (error) {
      this.output.warn(`stopping the server: ${String(error)}`);
    } finally {
      await client.dispose();
    }
  }

  async restart(): Promise<void> {
    this.output.info("restarting the server");
    await this.stop();
    await this.start();
  }

  private middleware(): Middleware {
    return {
      provideInlineCompletionItems: async (document, position, context, token, next) => {
        if (!this.enabled()) {
          return null;
        }
        const started = performance.now();
        const result = await next(document, position, context, token);
        const items = Array.isArray(result) ? result : result?.items;
        if (items !== undefined && items.length > 0 && !token.isCancellationRequested) {
          this.status.setLatency(performance.now() - started);
        }
        return result;
      },
      handleWorkDoneProgress: (token, params) => {
        // cancellable work (a refactoring) as a notification with Cancel; the rest in
        // Headstart's own status bar item rather than a second, generic one
        if (!this.notifications.handle(String(token), params)) {
          this.status.onProgress(String(token), params);
        }
      },
      executeCommand: async (command, args: unknown[], next): Promise<unknown> => {
        if (command !== REWRITE_COMMAND) {
          return next(command, args);
        }
        const [target, ...rest] = args;
        if (typeof target !== "object" || target === null || "instruction" in target) {
          return next(command, args);
        }
        const instruction = await vscode.window.showInputBox({
          title: "Headstart: rewrite",
          prompt: "How should the code be rewritten?",
          placeHolder: "e.g. use a dataclass; handle an empty list",
          ignoreFocusOut: true,
        });
        if (!instruction?.trim()) {
          return undefined;
        }
        return next(command, [{ ...target, instruction: instruction.trim() }, ...rest]);
      },
      workspace: {
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) {
            return answers;
          }
          return params.items.map((item, index): unknown =>
            item.section === SECTION
              ? serverSettings(this.keys, item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined)
              : answers[index],
          );
        },
      },
    };
  }

  private async configurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!event.affectsConfiguration(SECTION)) {
      return;
    }
    if (event.affectsConfiguration(`${SECTION}.enable`)) {
      this.status.setEnabled(this.enabled());
    }
    // what runs, where the key goes and what is written reach the server only at its
    // start (initializationOptions): it takes no machine setting from a later update
    const machine = [...this.keys].some(
      ([key, schema]) => isMachineSetting(schema) && event.affectsConfiguration(`${SECTION}.${key}`),
    );
    if (machine || event.affectsConfiguration(`${SECTION}.server`)) {
      await this.restart();
      return;
    }
    if (this.client?.state === State.Running) {
      await this.client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: { [SECTION]: serverSettings(this.keys) },
      });
    }
  }

  private async setEnabled(enabled: boolean): Promise<void> {
    const config = vscode.workspace.getConfiguration(SECTION);
    const inspected = config.inspect<boolean>("enable");
    const target =
      inspected?.workspaceFolderValue !== undefined || inspected?.workspaceValue !== undefined
        ? vscode.ConfigurationTarget.Workspace
        : vscode.ConfigurationTarget.Global;
    await config.update("enable", enabled, target);
    this.status.setEnabled(enabled);
  }

  /**
   * The editor's code action menu at the selection, narrowed to refactorings: the server's
   * model-backed rewrites are among them, resolved (and so run) only when one is picked.
   * A keybinding may pass `{"kind": "refactor.rewrite"}` (or any kind) to narrow it further.
   */
  private async refactor(args: unknown): Promise<void> {
    const kind =
      typeof args === "object" && args !== null && typeof (args as { kind?: unknown }).kind === "string"
        ? (args as { kind: string }).kind
        : REFACTOR_KIND;
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) {
      void vscode.window.showInformationMessage("Headstart: open a file and select the code to refactor.");
      return;
    }
    if (kind !== REFACTOR_KIND && (await this.runTheOnlyAction(editor, kind))) {
      return;
    }
    // none or several: the editor's menu lists them, or says why there is none
    const apply = kind === REFACTOR_KIND ? "never" : "ifSingle";
    await vscode.commands.executeCommand("editor.action.codeAction", { kind, apply });
  }

  /**
   * Run the one code action of `kind` at the selection, asked for and resolved here
   * rather than through `editor.action.codeAction`: that one drops its answer when the
   * editor's light bulb asks for the cursor's new place meanwhile (250 ms after a move),
   * and the user read "No code actions available". False when there is not exactly one.
   */
  private async runTheOnlyAction(editor: vscode.TextEditor, kind: string): Promise<boolean> {
    const found = await vscode.commands.executeCommand<(vscode.CodeAction | vscode.Command)[] | undefined>(
      "vscode.executeCodeActionProvider",
      editor.document.uri,
      editor.selection,
      kind,
      1, // resolve it: the model writes the edit now
    );
    const actions = (found ?? []).filter(
      (action): action is vscode.CodeAction => typeof (action as vscode.Command).command !== "string",
    );
    const action = actions.length === 1 ? actions[0] : undefined;
    if (action === undefined) {
      return false;
    }
    // no edit and no command: the resolve failed, and the server has said why
    if (action.edit !== undefined && !(await vscode.workspace.applyEdit(action.edit))) {
      void vscode.window.showWarningMessage(`${action.title}: the file changed meanwhile; run it again.`);
      return true;
    }
    if (action.command !== undefined) {
      const args: unknown[] = action.command.arguments ?? [];
      await vscode.commands.executeCommand(action.command.command, ...args);
    }
    return true;
  }

  /**
   * The server's generate actions of the open OpenAPI document (a client per language), as
   * a menu: they are source actions, which the light bulb does not show. The server says
   * why when the document is not one it can generate from.
   */
  private async generateFromOpenApi(): Promise<void> {
    if (vscode.window.activeTextEditor === undefined) {
      void vscode.window.showInformationMessage("Headstart: open an OpenAPI 3.x document (YAML or JSON) first.");
      return;
    }
    await vscode.commands.executeCommand("editor.action.codeAction", { kind: GENERATE_KIND, apply: "never" });
  }

  private async setApiKey(): Promise<void> {
    const key = await vscode.window.showInputBox({
      title: "Headstart: backend API key",
      prompt: "Kept in VS Code's secret storage and given to the server in the environment. Empty: forget it.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) {
      return;
    }
    if (key === "") {
      await this.context.secrets.delete(API_KEY_SECRET);
    } else {
      await this.context.secrets.store(API_KEY_SECRET, key);
    }
    await this.restart();
  }

  private async showMenu(): Promise<void> {
    const entries: (vscode.QuickPickItem & { command: string })[] = [
      this.enabled()
        ? { label: "$(circle-slash) Disable inline suggestions", command: "headstart.disable" }
        : { label: "$(sparkle) Enable inline suggestions", command: "headstart.enable" },
      { label: "$(debug-restart) Restart the server", command: "headstart.restartServer" },
      { label: "$(output) Show the log", command: "headstart.showLog" },
      { label: "$(wand) Refactor…", command: "headstart.refactor" },
      { label: "$(book) Add a docstring", command: "headstart.addDocstring" },
      { label: "$(symbol-parameter) Add type hints", command: "headstart.addTypeHints" },
      { label: "$(symbol-method) Extract the selected lines into a function", command: "headstart.extractFunction" },
      { label: "$(edit) Rewrite with an instruction…", command: "headstart.rewriteWithInstruction" },
      { label: "$(file-code) Generate code from this OpenAPI document…", command: "headstart.generateFromOpenApi" },
      { label: "$(key) Set the backend API key…", command: "headstart.setApiKey" },
      { label: "$(settings-gear) Settings", command: "headstart.openSettings" },
    ];
    const picked = await vscode.window.showQuickPick(entries, { title: "Headstart" });
    if (picked === undefined) {
      return;
    }
    if (picked.command === "headstart.openSettings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "@ext:headstart.headstart");
    } else {
      await vscode.commands.executeCommand(picked.command);
    }
  }
}

function serverState(state: State): ServerState {
  switch (state) {
    case State.Running:
      return "running";
    case State.Starting:
      return "starting";
    case State.Stopped:
    default:
      return "stopped";
  }
}
