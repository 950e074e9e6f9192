// Opens a project that code-server does not trust (Restricted Mode), as a person would on
// a repository just cloned: checks that the window says Restricted Mode, waits for
// Headstart's server, then types a line and waits for the ghost text. Whether the
// repository's own settings chose anything is the test's to check (what reached which
// backend, which files appeared); this only drives the editor.
// Writes results.json and screenshots into `outDir`.
//
// Usage: node restricted.mjs CONFIG.json (tests/test_vscode_e2e.py writes it).
import { quickOpen, readConfig, startDriver } from "./workbench.mjs";

/**
 * @typedef {{
 *   url: string, cdpUrl: string, outDir: string, file: string, timeoutMs?: number,
 *   type: string, expected: string,
 * }} Config
 */

/** @type {Config} */
const config = readConfig();
const { timeout, results, log, save, browser, context, page, shot, ghostText } = await startDriver(config);

let failed = false;
try {
  log(`open ${config.url}`);
  await page.goto(config.url, { timeout });
  await page.locator(".monaco-workbench").waitFor({ timeout });
  // the status bar item and the banner of an untrusted window
  await page.locator(".monaco-workbench", { hasText: "Restricted Mode" }).first().waitFor({ timeout });
  results.restrictedMode = true;
  log("Restricted Mode; waiting for the Headstart status bar item");
  const item = page.locator(".statusbar-item", { hasText: "Headstart" }).first();
  await item.waitFor({ timeout });

  log(`quick open ${config.file}`);
  await quickOpen(page, config.file, timeout);
  // the server is up and has probed the backend once the item shows the sparkle icon
  await item.locator(".codicon-sparkle").waitFor({ timeout });
  await shot("restricted-1-opened");

  log("type at the end of the file and wait for the ghost text");
  await page.keyboard.press("Control+End");
  await page.keyboard.type(config.type, { delay: 40 });
  const deadline = Date.now() + timeout;
  while (!(await ghostText()).includes(config.expected)) {
    if (Date.now() > deadline) throw new Error(`no ghost text ${config.expected}; shown: ${await ghostText()}`);
    await page.waitForTimeout(50);
  }
  results.ghostText = await ghostText();
  await shot("restricted-2-ghost-text");
} catch (error) {
  failed = true;
  results.error = error instanceof Error ? (error.stack ?? error.message) : String(error);
  log(`failed: ${String(results.error)}`);
  await shot("restricted-failure").catch(() => undefined);
} finally {
  save();
  await context.close().catch(() => undefined);
  await browser.close();
}
process.exit(failed ? 1 : 0);
