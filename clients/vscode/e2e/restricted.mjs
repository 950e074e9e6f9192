// Opens a project that code-server does not trust (Restricted Mode), as a person would on
// a repository just cloned: checks that the window says Restricted Mode, waits for
// Headstart's server, then types a line and waits for the ghost text. Whether the
// repository's own settings chose anything is the test's to check (what reached which
// backend, which files appeared); this only drives the editor.
// Writes results.json and screenshots into `outDir`.
//
// Usage: node restricted.mjs CONFIG.json (tests/test_vscode_e2e.py writes it).
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const GHOST = ".monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text";

/**
 * @typedef {{
 *   url: string, cdpUrl: string, outDir: string, file: string, timeoutMs?: number,
 *   type: string, expected: string,
 * }} Config
 */

/** @type {Config} */
const config = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8"));
mkdirSync(config.outDir, { recursive: true });
const timeout = config.timeoutMs ?? 30000;
/** @type {Record<string, unknown>} */
const results = { steps: [] };
const log = (/** @type {string} */ step) => {
  const at = new Date().toISOString();
  /** @type {string[]} */ (results.steps).push(`${at} ${step}`);
  console.log(`${at} ${step}`);
};

const browser = await chromium.connectOverCDP(config.cdpUrl, { timeout });
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
const shot = async (/** @type {string} */ name) => {
  await page.screenshot({ path: join(config.outDir, `${name}.png`) });
};
const ghostText = () =>
  page.evaluate(
    (selector) =>
      Array.from(document.querySelectorAll(selector), (node) => node.textContent).join("").replace(/\u00a0/g, " "),
    GHOST,
  );

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
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ timeout });
  await page.keyboard.type(config.file);
  await page.locator(".quick-input-list .monaco-list-row").first().waitFor({ timeout });
  await page.keyboard.press("Enter");
  await page.locator(`.tab[data-resource-name="${config.file.split("/").at(-1) ?? ""}"]`).waitFor({ timeout });
  await page.locator(".monaco-editor .view-lines").first().click();
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
  writeFileSync(join(config.outDir, "results.json"), JSON.stringify(results, null, 2));
  await context.close().catch(() => undefined);
  await browser.close();
}
process.exit(failed ? 1 : 0);
