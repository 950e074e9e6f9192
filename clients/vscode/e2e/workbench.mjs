// What every e2e driver does first: read its config, connect to the headless Chromium the
// test started, and keep a log of steps in results.json; plus the editor steps they share
// (the ghost text shown, a file opened through quick open).
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** The ghost text's elements in the editor, in the VS Code versions code-server ships. */
export const GHOST = ".monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text";

/**
 * The config the test wrote (the path in argv[2]), untyped: the driver says its type.
 * @returns {any}
 */
export function readConfig() {
  return JSON.parse(readFileSync(process.argv[2] ?? "", "utf8"));
}

/**
 * For `config` (see readConfig): its outDir made; a page in a fresh context of the
 * Chromium at `cdpUrl` (the test starts it, in a process group it stops afterwards,
 * whatever happens here); `results` with a log of steps, and `save` to write it to
 * outDir/results.json.
 * @param {{cdpUrl: string, outDir: string, timeoutMs?: number}} config
 */
export async function startDriver(config) {
  mkdirSync(config.outDir, { recursive: true });
  const timeout = config.timeoutMs ?? 30000;
  /** @type {Record<string, unknown>} */
  const results = { steps: [] };
  const log = (/** @type {string} */ step) => {
    const at = new Date().toISOString();
    /** @type {string[]} */ (results.steps).push(`${at} ${step}`);
    console.log(`${at} ${step}`);
  };
  const save = () => writeFileSync(join(config.outDir, "results.json"), JSON.stringify(results, null, 2));

  const browser = await chromium.connectOverCDP(config.cdpUrl, { timeout });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const shot = async (/** @type {string} */ name) => {
    await page.screenshot({ path: join(config.outDir, `${name}.png`) });
  };
  /** The ghost text now shown in the editor (non-breaking spaces as spaces). */
  const ghostText = () =>
    page.evaluate(
      (selector) =>
        Array.from(document.querySelectorAll(selector), (node) => node.textContent).join("").replace(/\u00a0/g, " "),
      GHOST,
    );
  return { timeout, results, log, save, browser, context, page, shot, ghostText };
}

/**
 * Open `file` (a path in the workspace) with quick open, wait for its tab and click into
 * the editor.
 * @param {import("playwright-core").Page} page
 * @param {string} file
 * @param {number} timeout
 */
export async function quickOpen(page, file, timeout) {
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ timeout });
  await page.keyboard.type(file);
  await page.locator(".quick-input-list .monaco-list-row").first().waitFor({ timeout });
  await page.keyboard.press("Enter");
  await page.locator(`.tab[data-resource-name="${file.split("/").at(-1) ?? ""}"]`).waitFor({ timeout });
  await page.locator(".monaco-editor .view-lines").first().click();
}
