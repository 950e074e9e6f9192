/**
 * The status bar item: whether suggestions are on, the server's progress (indexing), whether
 * the backend answers, and how long the last suggestion took. A click opens the menu.
 */
import * as vscode from "vscode";

/** What the server sends as `$/headstart/status` after it has talked to the backend. */
export interface BackendStatus {
  backendOk: boolean;
  backendUrl: string;
  model?: string | null;
  error?: string | null;
  latencyMs?: number | null;
}

export type ServerState = "starting" | "running" | "stopped";

interface Progress {
  title: string;
  message?: string;
  percentage?: number;
}

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private server: ServerState = "starting";
  private enabled = true;
  private backend: BackendStatus | undefined;
  private model: string | undefined;
  private lastLatencyMs: number | undefined;
  private readonly progress = new Map<string, Progress>();

  constructor(command: string) {
    this.item = vscode.window.createStatusBarItem("headstart.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "Headstart";
    this.item.command = command;
    this.render();
    this.item.show();
  }

  setServer(state: ServerState): void {
    this.server = state;
    if (state !== "running") {
      this.progress.clear();
    }
    this.render();
  }

  setEnabled(enabled: boolean): void {
    this.enabled = enabled;
    this.render();
  }

  setBackend(status: BackendStatus): void {
    this.backend = status;
    if (status.model) {
      this.model = status.model;
    }
    this.render();
  }

  /** The round trip of the last inline completion request that brought a suggestion. */
  setLatency(ms: number): void {
    this.lastLatencyMs = ms;
    this.render();
  }

  /** A `$/progress` value of work-done progress `token` (begin, report or end). */
  onProgress(token: string, value: { kind: string; title?: string; message?: string; percentage?: number }): void {
    if (value.kind === "end") {
      this.progress.delete(token);
    } else {
      const known = this.progress.get(token);
      this.progress.set(token, {
        title: value.title ?? known?.title ?? "Headstart",
        message: value.message ?? known?.message,
        percentage: value.percentage ?? known?.percentage,
      });
    }
    this.render();
  }

  private render(): void {
    const item = this.item;
    const tooltip = new vscode.MarkdownString(undefined, true);
    item.backgroundColor = undefined;
    const busy = [...this.progress.values()].at(-1);
    if (this.server === "stopped") {
      item.text = "$(error) Headstart";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
      tooltip.appendMarkdown("The Headstart server is not running. Click for the menu (restart, log).");
    } else if (this.server === "starting") {
      item.text = "$(loading~spin) Headstart";
      tooltip.appendMarkdown("Starting the Headstart server…");
    } else if (busy !== undefined) {
      const percent = busy.percentage === undefined ? "" : ` ${busy.percentage}%`;
      const title = busy.title.startsWith("Headstart") ? busy.title : `Headstart: ${busy.title}`;
      item.text = `$(sync~spin) ${title}${percent}`;
      tooltip.appendMarkdown(`${busy.title}${busy.message ? `: ${busy.message}` : ""}`);
    } else if (!this.enabled) {
      item.text = "$(circle-slash) Headstart";
      tooltip.appendMarkdown("Inline suggestions are off. Click to turn them on.");
    } else if (this.backend !== undefined && !this.backend.backendOk) {
      item.text = "$(warning) Headstart";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
      tooltip.appendMarkdown(`The backend at \`${this.backend.backendUrl}\` failed: ${this.backend.error ?? "no answer"}`);
    } else {
      const latency = this.lastLatencyMs === undefined ? "" : ` ${Math.round(this.lastLatencyMs)} ms`;
      item.text = `$(sparkle) Headstart${latency}`;
      if (this.backend === undefined) {
        tooltip.appendMarkdown("Headstart is running; the backend has not been asked yet.");
      } else {
        const model = this.model ? ` (${this.model})` : "";
        tooltip.appendMarkdown(`Backend \`${this.backend.backendUrl}\`${model} answers.`);
      }
      if (this.lastLatencyMs !== undefined) {
        tooltip.appendMarkdown(`\n\nLast suggestion: ${this.lastLatencyMs.toFixed(0)} ms from request to answer.`);
      }
    }
    tooltip.appendMarkdown("\n\nClick for Headstart's commands.");
    item.tooltip = tooltip;
  }

  dispose(): void {
    this.item.dispose();
  }
}
