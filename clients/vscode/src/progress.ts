/**
 * Cancellable work-done progress (a refactoring the model is writing) as a notification with
 * a Cancel button: vscode-languageclient's own shows it in the status bar, where it cannot be
 * cancelled. Progress that cannot be cancelled (indexing) goes to the status bar item.
 */
import * as vscode from "vscode";

export interface ProgressValue {
  kind: string;
  title?: string;
  message?: string;
  percentage?: number;
  cancellable?: boolean;
}

interface Shown {
  progress?: vscode.Progress<{ message?: string; increment?: number }>;
  finish?: () => void;
  message?: string;
  reported: number;
  ended: boolean;
}

export class NotificationProgress implements vscode.Disposable {
  private readonly shown = new Map<string, Shown>();

  /** `cancel(token)` tells the server that the user cancelled the work of `token`. */
  constructor(private readonly cancel: (token: string) => void) {}

  /** Show `value` if it belongs to cancellable progress; false if it is not this one's. */
  handle(token: string, value: ProgressValue): boolean {
    if (value.kind === "begin") {
      if (!value.cancellable) {
        return false;
      }
      this.begin(token, value);
      return true;
    }
    const shown = this.shown.get(token);
    if (shown === undefined) {
      return false;
    }
    if (value.kind === "end") {
      shown.ended = true;
      this.shown.delete(token);
      shown.finish?.();
    } else {
      this.report(shown, value);
    }
    return true;
  }

  private begin(token: string, value: ProgressValue): void {
    const shown: Shown = { message: value.message, reported: 0, ended: false };
    this.shown.set(token, shown);
    const options = {
      location: vscode.ProgressLocation.Notification,
      title: value.title ?? "Headstart",
      cancellable: true,
    };
    void vscode.window.withProgress(options, (progress, cancelled) => {
      shown.progress = progress;
      cancelled.onCancellationRequested(() => {
        this.cancel(token);
      });
      this.report(shown, value);
      return new Promise<void>((resolve) => {
        shown.finish = resolve;
        if (shown.ended) {
          resolve();
        }
      });
    });
  }

  private report(shown: Shown, value: ProgressValue): void {
    shown.message = value.message ?? shown.message;
    let increment: number | undefined;
    if (value.percentage !== undefined) {
      const percentage = Math.max(0, Math.min(100, value.percentage));
      increment = Math.max(0, percentage - shown.reported);
      shown.reported += increment;
    }
    shown.progress?.report({ message: shown.message, increment });
  }

  dispose(): void {
    for (const shown of this.shown.values()) {
      shown.finish?.();
    }
    this.shown.clear();
  }
}
