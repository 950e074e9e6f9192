// Drives code-server in headless Chromium as a person would: open a file of the sample
// project, type, wait for Headstart's ghost text, accept it with Tab, save; time keystroke
// -> visible ghost text; change a setting and see the server follow it; run the commands
// (disable, enable, restart, log) and two refactorings; hover the mouse over a name defined
// in another file of the project and read the hover widget.
// Writes results.json and screenshots into `outDir`.
//
// Usage: node ghost_text.mjs CONFIG.json (tests/test_vscode_e2e.py writes it; see Config
// below). The fake model answers each prompt as the test scripted it; the checks on the
// results are the test's.
import { readFileSync } from "node:fs";
import { GHOST, quickOpen, readConfig, startDriver } from "./workbench.mjs";

/**
 * @typedef {{
 *   url: string, cdpUrl: string, outDir: string, file: string, path: string, timeoutMs?: number,
 *   change: {key: string, title: string, value: string, eventsUrl: string, maxTokens: number},
 *   commands: {word: string, expected: string, serverLog: string},
 *   refactor: {line: number, docstring: string, instruction: string, rewritten: string},
 *   hover: {line: string, word: string, signature: string, where: string},
 *   accept: {type: string, expected: string},
 *   latency: {count: number, prefix: string, text: string},
 * }} Config
 * @typedef {{keydown: number | null, mutated: number | null, shown: number | null}} Marks
 */

/** @type {Config} */
const config = readConfig();
const { timeout, results, log, save, browser, context, page, shot, ghostText } = await startDriver(config);
/** @type {string[]} */
const consoleErrors = [];
page.on("console", (message) => {
  if (message.type() === "error") consoleErrors.push(message.text());
});

/** The text of the editor line the cursor is on, as rendered (ghost text excluded). */
const cursorLine = () =>
  page.evaluate(() => {
    /** The `top` of the element, or of the nearest ancestor that is positioned with one. */
    const topOf = (/** @type {Element | null} */ node) => {
      for (let at = node; at instanceof HTMLElement; at = at.parentElement) {
        if (at.style.top) return at.style.top;
      }
      return null;
    };
    const top = topOf(document.querySelector(".monaco-editor .active-line-number"));
    const lines = Array.from(document.querySelectorAll(".monaco-editor .view-lines .view-line"));
    const line = lines.find((node) => top !== null && topOf(node) === top);
    if (!line) return null;
    const clone = /** @type {HTMLElement} */ (line.cloneNode(true));
    clone.querySelectorAll(".ghost-text-decoration, .ghost-text-decoration-preview").forEach((node) => {
      node.remove();
    });
    return (clone.textContent ?? "").replace(/\u00a0/g, " ");
  });

const statusBarText = () =>
  page.evaluate(() => {
    const item = Array.from(document.querySelectorAll(".statusbar-item")).find((node) =>
      (node.textContent ?? "").includes("Headstart"),
    );
    return item ? { text: (item.textContent ?? "").trim(), label: item.getAttribute("aria-label") } : null;
  });

/**
 * Press `key` and return when ghost text containing `expected` has been painted: the
 * keydown's event time to the animation frame after the DOM first shows that text.
 */
async function timedKey(/** @type {string} */ key, /** @type {string} */ expected) {
  await page.evaluate(
    ({ selector, expected }) => {
      /** @type {Marks} */
      const marks = { keydown: null, mutated: null, shown: null };
      /** @type {Window & {__headstart?: Marks}} */ (window).__headstart = marks;
      const text = () =>
        Array.from(document.querySelectorAll(selector), (node) => node.textContent)
          .join("")
          .replace(/\u00a0/g, " ");
      window.addEventListener(
        "keydown",
        (event) => {
          marks.keydown = event.timeStamp;
        },
        { capture: true, once: true },
      );
      const observer = new MutationObserver(() => {
        if (marks.keydown === null || marks.mutated !== null || !text().includes(expected)) return;
        marks.mutated = performance.now();
        observer.disconnect();
        requestAnimationFrame(() => {
          marks.shown = performance.now();
        });
      });
      const root = document.querySelector(".monaco-workbench") ?? document.body;
      observer.observe(root, { subtree: true, childList: true, characterData: true });
    },
    { selector: GHOST, expected },
  );
  await page.keyboard.press(key);
  await page.waitForFunction(
    () => (/** @type {Window & {__headstart?: Marks}} */ (window).__headstart?.shown ?? null) !== null,
    null,
    { timeout },
  );
  return page.evaluate(() => /** @type {Marks} */ (/** @type {Window & {__headstart?: Marks}} */ (window).__headstart));
}

/**
 * The file's text on disk once `done(text)` holds (a save is done when the disk says so: the
 * tab's dirty mark goes earlier, before save participants have run).
 */
async function untilSaved(/** @type {(text: string) => boolean} */ done) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const text = readFileSync(config.path, "utf8");
    if (done(text)) return text;
    if (Date.now() > deadline) throw new Error(`${config.path} was not saved as expected`);
    await page.waitForTimeout(50);
  }
}

/** Run a command from the command palette by its title. */
async function runCommand(/** @type {string} */ title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout });
  await page.keyboard.press("Enter");
  await input.waitFor({ state: "hidden", timeout });
}

/** The codicon `icon` in Headstart's status bar item. */
const headstartIcon = (/** @type {string} */ icon) =>
  page.locator(".statusbar-item", { hasText: "Headstart" }).locator(`.codicon-${icon}`).first();

/** Wait until the ghost text contains `expected`. */
async function waitForGhost(/** @type {string} */ expected) {
  await page.waitForFunction(
    ({ selector, expected }) =>
      Array.from(document.querySelectorAll(selector), (node) => node.textContent)
        .join("")
        .replace(/\u00a0/g, " ")
        .includes(expected),
    { selector: GHOST, expected },
    { timeout },
  );
}

/** Take back the last key of `word` and type it again: a fresh request, the same prompt. */
async function retypeLastKey(/** @type {string} */ word, /** @type {string} */ expected) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Backspace");
  await page.keyboard.type(word.slice(-1));
  await waitForGhost(expected);
}

const percentile = (/** @type {number[]} */ values, /** @type {number} */ p) => {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? NaN;
};

let failed = false;
try {
  log(`open ${config.url}`);
  await page.goto(config.url, { timeout });
  await page.locator(".monaco-workbench").waitFor({ timeout });
  await page.locator(".explorer-folders-view, .explorer-viewlet").first().waitFor({ timeout });
  log("workbench up; waiting for the Headstart status bar item");
  await page.locator(".statusbar-item", { hasText: "Headstart" }).first().waitFor({ timeout });

  log(`quick open ${config.file}`);
  await quickOpen(page, config.file, timeout);
  // The server is up (and has probed the backend) once the item shows the sparkle icon.
  await page
    .locator(".statusbar-item", { hasText: "Headstart" })
    .locator(".codicon-sparkle")
    .first()
    .waitFor({ timeout });
  results.statusBarAtStart = await statusBarText();
  await shot("1-opened");

  log("type at the end of the file and wait for the ghost text");
  await page.keyboard.press("Control+End");
  await page.keyboard.type(config.accept.type, { delay: 40 });
  await waitForGhost(config.accept.expected);
  results.ghostText = await ghostText();
  results.lineBeforeTab = await cursorLine();
  await shot("2-ghost-text");

  log("Tab accepts it; Ctrl+S saves");
  await page.keyboard.press("Tab");
  await page.waitForFunction((selector) => document.querySelectorAll(selector).length === 0, GHOST, { timeout });
  results.lineAfterTab = await cursorLine();
  await shot("3-accepted");
  await page.keyboard.press("Control+S");
  results.savedAfterTab = await untilSaved((text) => text.includes(/** @type {string} */ (results.lineAfterTab)));
  log("saved");

  log(`time ${config.latency.count} keystrokes to visible ghost text`);
  /** @type {{key: string, ms: number, domMs: number, ghost: string}[]} */
  const samples = [];
  for (let k = 0; k < config.latency.count; k++) {
    const word = `${config.latency.prefix}${String(k).padStart(2, "0")}`;
    const expected = config.latency.text.replace("{k}", String(k));
    await page.keyboard.press("Escape");
    await page.keyboard.press("End");
    await page.keyboard.press("Enter");
    await page.keyboard.type(word.slice(0, -1), { delay: 30 });
    await page.waitForTimeout(400); // the ghost text for the unfinished word settles
    const marks = await timedKey(word.slice(-1), expected);
    if (marks.keydown === null || marks.shown === null || marks.mutated === null) throw new Error("no marks");
    samples.push({
      key: word,
      ms: marks.shown - marks.keydown,
      domMs: marks.mutated - marks.keydown,
      ghost: await ghostText(),
    });
    if (k === 0) await shot("4-latency-first");
  }
  await shot("5-latency-last");
  const latencies = samples.map((sample) => sample.ms);
  results.latency = {
    samples,
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    min: Math.min(...latencies),
    max: Math.max(...latencies),
  };
  results.statusBarAtEnd = await statusBarText();
  log(`keystroke to ghost text: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`);

  log("change a setting in the Settings editor; the server's next requests must follow it");
  const { key, value, eventsUrl, maxTokens } = config.change;
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+Comma");
  const search = page.locator(".settings-editor .suggest-input-container textarea, .settings-editor .search-container input").first();
  await search.waitFor({ timeout });
  await search.fill(key);
  // the search filters after a pause: wait for the setting itself
  const item = page.locator(".settings-editor .setting-item", { hasText: config.change.title }).first();
  await item.waitFor({ timeout });
  results.settingTitle = (await item.locator(".setting-item-title").textContent())?.trim();
  const input = item.locator("input");
  results.settingBefore = await input.inputValue();
  await input.fill(value);
  await input.press("Tab");
  await shot("6-settings-editor");
  await page.keyboard.press("Control+W");
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+End");
  await page.keyboard.press("Enter");
  const changeDeadline = Date.now() + timeout;
  for (let typed = 1; ; typed++) {
    await page.keyboard.type("w");
    await page.waitForTimeout(300);
    const response = await fetch(eventsUrl);
    const events = /** @type {{max_tokens?: number}[]} */ (await response.json());
    if (events.some((event) => event.max_tokens === maxTokens)) {
      results.settingChange = { keysUntilApplied: typed };
      break;
    }
    if (Date.now() > changeDeadline) throw new Error(`no request with max_tokens ${maxTokens} after the change`);
  }
  await shot("7-setting-followed");

  log("commands: Disable (no ghost text), Enable (ghost text again), Restart the Language Server, Show the Log");
  const { word, expected: toggled, serverLog } = config.commands;
  await page.keyboard.press("Escape");
  await runCommand("Headstart: Disable Inline Suggestions");
  await headstartIcon("circle-slash").waitFor({ timeout });
  results.statusBarDisabled = await statusBarText();
  await page.keyboard.press("End");
  await page.keyboard.press("Enter");
  await page.keyboard.type(word, { delay: 30 });
  await page.waitForTimeout(1500); // enabled, the ghost text shows within ~0.1 s
  results.ghostWhileDisabled = await ghostText();
  await shot("8-disabled");
  await runCommand("Headstart: Enable Inline Suggestions");
  await headstartIcon("sparkle").waitFor({ timeout });
  await retypeLastKey(word, toggled);
  results.ghostAfterEnable = await ghostText();
  const starts = () => (readFileSync(serverLog, "utf8").match(/ started for /g) ?? []).length;
  const startsBefore = starts();
  await runCommand("Headstart: Restart the Language Server");
  const restartDeadline = Date.now() + timeout;
  while (starts() === startsBefore) {
    if (Date.now() > restartDeadline) throw new Error("the server did not start again");
    await page.waitForTimeout(100);
  }
  await headstartIcon("sparkle").waitFor({ timeout });
  await retypeLastKey(word, toggled);
  results.ghostAfterRestart = await ghostText();
  results.serverStarts = starts();
  await shot("9-after-restart");
  await runCommand("Headstart: Show the Log");
  const logView = page.locator(".part.panel .monaco-editor .view-lines", { hasText: "server.lsp.handlers:" }).first();
  await logView.waitFor({ timeout });
  results.logPanel = (await logView.textContent())?.replace(/\u00a0/g, " ");
  await shot("10-log");

  log("refactorings from the command palette: Add a Docstring, Rewrite with an Instruction…");
  const { line, docstring, instruction, rewritten } = config.refactor;
  // The log panel has the focus; a command run now may act on it, not on main.py.
  await runCommand("View: Focus First Editor Group");
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ timeout });
  await page.keyboard.type(`:${line}`);
  await page.keyboard.press("Enter");
  // The command acts at the cursor: wait until the editor says it is on that line.
  await page.locator(".statusbar-item", { hasText: `Ln ${line},` }).first().waitFor({ timeout });
  await runCommand("Headstart: Add a Docstring");
  await page.locator(".monaco-editor .view-lines", { hasText: docstring }).first().waitFor({ timeout });
  await shot("11-docstring");
  await runCommand("Headstart: Rewrite with an Instruction…");
  const box = page.locator(".quick-input-widget input");
  await box.waitFor({ timeout });
  results.rewritePrompt = await page.locator(".quick-input-widget .quick-input-message").textContent();
  await box.fill(instruction);
  await page.keyboard.press("Enter");
  await page.locator(".monaco-editor .view-lines", { hasText: rewritten }).first().waitFor({ timeout });
  await shot("12-rewritten");
  // the refactoring's progress (a notification with Cancel) closes when the server ends it
  const toast = page.locator(".notification-toast", { hasText: "Headstart: rewrite" });
  results.progressToastSeen = (await toast.count()) > 0;
  await toast.waitFor({ state: "detached", timeout });
  await page.keyboard.press("Control+S");
  results.savedAtEnd = await untilSaved((text) => text.includes(docstring) && text.includes(rewritten));

  log("hover the mouse over a name imported from another file: the hover shows its definition");
  const { line: hoverLine, word: hoverWord, signature, where } = config.hover;
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+Home"); // main() in view
  const spot = await page.evaluate(
    ({ lineText, word }) => {
      const lines = Array.from(document.querySelectorAll(".monaco-editor .view-lines .view-line"));
      const text = (/** @type {Node} */ node) => (node.textContent ?? "").replace(/\u00a0/g, " ");
      const line = lines.find((node) => text(node).includes(lineText));
      if (!line) return null;
      // the word's characters, as laid out: a DOM range over the line's text nodes
      const start = text(line).indexOf(lineText) + lineText.indexOf(word);
      const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
      const range = document.createRange();
      for (let node = walker.nextNode(), at = 0; node; node = walker.nextNode()) {
        const length = (node.textContent ?? "").length;
        if (at <= start && start < at + length) range.setStart(node, start - at);
        if (at < start + word.length && start + word.length <= at + length) {
          range.setEnd(node, start + word.length - at);
        }
        at += length;
      }
      const box = range.getBoundingClientRect();
      return { x: box.left + box.width / 2, y: box.top + box.height / 2 };
    },
    { lineText: hoverLine, word: hoverWord },
  );
  if (!spot) throw new Error(`no editor line shows ${hoverLine}`);
  await page.mouse.move(spot.x - 40, spot.y + 30); // come in from beside it, as a hand would
  await page.mouse.move(spot.x, spot.y, { steps: 5 });
  const widget = page.locator(".monaco-editor .monaco-hover", { hasText: where }).filter({ hasText: signature });
  await widget.first().waitFor({ timeout });
  const contents = widget.first().locator(".hover-contents").first();
  results.hover = {
    text: (await contents.innerText()).replace(/\u00a0/g, " "),
    // the link to the definition (its `title`: the server's URI; `data-href`: the remote one)
    link: await contents.locator("a", { hasText: where }).first().getAttribute("title"),
  };
  await shot("13-hover");
} catch (error) {
  failed = true;
  results.error = error instanceof Error ? error.stack ?? error.message : String(error);
  log(`failed: ${String(results.error)}`);
  await shot("failure").catch(() => undefined);
} finally {
  results.consoleErrors = consoleErrors;
  save();
  await context.close().catch(() => undefined);
  await browser.close();
}
process.exit(failed ? 1 : 0);
