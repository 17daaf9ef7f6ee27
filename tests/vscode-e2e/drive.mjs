// @ts-check
/**
 * Drives Cody's VS Code extension inside a real VS Code (code-server, already running) from
 * Debian's chromium with playwright-core, the way a user would: open the Cody view, a text
 * turn, a tool turn, an edit allowed and one rejected in VS Code's diff editor and modal
 * dialog, a cancelled command, a settings change that restarts the daemon, and a window
 * reload that must shut the daemon down cleanly at once.
 *
 *     node drive.mjs run.json
 *
 * Run with TZ=UTC, like code-server (the Cody log's timestamps are compared with this clock).
 *
 * run.json: { url, workspace, userDataDir, outDir, marker, chromium }; the workspace holds
 * greet.py as ORIGINAL below. `marker` is an environment entry (NAME=value) that code-server
 * and everything it starts carry, so the daemons of this run are told apart from any other
 * on the machine. processes.mjs reads /proc; workbench.mjs works the VS Code UI.
 *
 * Writes a screenshot per step and `result.json` into outDir; exits 1 with the reason on the
 * first failed check. Invariant: every request the browser makes must go to 127.0.0.1 (a
 * request to any other host fails the run; the resolver maps every other name to nothing).
 */

import assert from "node:assert/strict";
import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { chromium } from "playwright-core";

import { alive, daemons as daemonsOf, descendants, until } from "./processes.mjs";
import { TURN_MS, ask, chatFrame, codyLogOf, dialog, following, idle, runCommand, screenshot, showCody } from "./workbench.mjs";

/** @typedef {import("playwright-core").Page} Page */
/** @typedef {import("playwright-core").FrameLocator} FrameLocator */

const config = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8"));
/** @type {{url: string, workspace: string, userDataDir: string, outDir: string, marker: string, chromium: string}} */
const run = config;

const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-features=Translate,OptimizationHints,MediaRouter",
  // nothing but the loopback address can be reached, whatever a page asks for
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];
const ORIGINAL = 'def greet(name):\n    return "Hello " + name\n\n\nprint(greet("world"))';
const IMPROVED = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n\n\nprint(greet("world"))';

/** @type {{name: string, ms: number, screenshot: string}[]} */
const steps = [];
/**
 * Every request the browser made, and how it was answered: "network" (or "failed", or
 * "pending" at the end), or "service worker" when a webview's service worker answered it
 * without any network (VS Code's webviews load their resources from
 * https://*.vscode-resource.vscode-cdn.net that way, through the workbench).
 * @type {Map<import("playwright-core").Request | string, {url: string, host: string, servedBy: string}>}
 */
const requests = new Map();
/** The one host a service worker may answer for: VS Code's webview resources. */
const WEBVIEW_RESOURCES = /\.vscode-resource\.vscode-cdn\.net$/;
/** @type {Record<string, unknown>} */
const result = { steps };

/**
 * Requests that went (or tried to go) anywhere but 127.0.0.1.
 * @returns {string[]}
 */
function foreignRequests() {
  return [...requests.values()]
    .filter(({ host, servedBy }) => host !== "127.0.0.1" && !(servedBy === "service worker" && WEBVIEW_RESOURCES.test(host)))
    .map(({ url, servedBy }) => `${url} (${servedBy})`);
}

/** @returns {Record<string, Record<string, number>>} host -> how it was served -> count */
function requestSummary() {
  /** @type {Record<string, Record<string, number>>} */
  const summary = {};
  for (const { host, servedBy } of requests.values()) {
    const counts = (summary[host] ??= {});
    counts[servedBy] = (counts[servedBy] ?? 0) + 1;
  }
  return summary;
}

// ------------------------------------------------------------------ the steps

/**
 * @param {Page} page
 * @param {string} name
 * @param {() => Promise<void>} body
 */
async function step(page, name, body) {
  const started = Date.now();
  process.stdout.write(`step ${name} ... `);
  await body();
  const shot = join(run.outDir, `${String(steps.length + 1).padStart(2, "0")}-${name}.png`);
  await screenshot(page, shot);
  const ms = Date.now() - started;
  steps.push({ name, ms, screenshot: shot });
  process.stdout.write(`${String(ms)} ms\n`);
}

/** The daemons of this run. */
function daemons() {
  return daemonsOf(run.marker);
}

/** @param {string} path */
function workspaceFile(path) {
  return readFileSync(join(run.workspace, path), "utf8");
}

/** @param {Page} page */
async function scenario(page) {
  /** @type {FrameLocator} */
  let chat = chatFrame(page);

  await step(page, "cody-view", async () => {
    await page.goto(`${run.url}?folder=${encodeURIComponent(run.workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    await showCody(page);
    chat = chatFrame(page);
    await chat.locator("#transcript", { hasText: "Ask Cody something" }).waitFor({ timeout: 30_000 });
    await chat.locator("#daemon", { hasText: "not started" }).waitFor();
    // widen the side bar (drag its edge) so that the chat reads well in the screenshots
    const bar = await page.locator(".part.sidebar").boundingBox();
    assert.ok(bar, "the side bar is shown");
    const edge = { x: bar.x + bar.width + 1, y: bar.y + bar.height / 2 };
    await page.mouse.move(edge.x, edge.y);
    await page.mouse.down();
    await page.mouse.move(edge.x + 160, edge.y, { steps: 8 });
    await page.mouse.up();
  });

  await step(page, "text-turn", async () => {
    await ask(chat, "hello");
    await chat.locator(".message.agent", { hasText: "built-in offline model" }).waitFor({ timeout: TURN_MS });
    await idle(chat);
    await chat.locator("#daemon", { hasText: "ready" }).waitFor();
    await chat.locator("#status .chip", { hasText: "offline" }).first().waitFor();
  });
  const [first] = daemons();
  assert.ok(first, "a daemon runs after the first turn");
  assert.deepEqual(first.argv.slice(-2), ["-m", "cody_daemon"], "the daemon is the one from cody.daemon.command");
  result.firstDaemon = first.pid;

  await step(page, "tool-turn", async () => {
    assert.equal(workspaceFile("greet.py"), ORIGINAL);
    await ask(chat, "read greet.py");
    const card = chat.locator(".tool.completed", { hasText: "greet.py" });
    await card.waitFor({ timeout: TURN_MS });
    await idle(chat);
    assert.match(await card.locator(".tool-output").innerText(), /return "Hello " \+ name/);
    assert.equal(await card.locator(".tool-status").innerText(), "done");
  });

  await step(page, "edit-approval", async () => {
    await ask(chat, `write greet.py: ${IMPROVED}`);
    const box = await dialog(page, "Cody wants to change greet.py");
    // VS Code's own diff editor, opened before the dialog, with the old and the new text
    const diff = page.locator(".monaco-diff-editor");
    await diff.waitFor({ timeout: 10_000 });
    await page.locator(".tab", { hasText: "greet.py ↔ Cody's proposed change" }).waitFor();
    await diff.locator(".editor.original .view-lines", { hasText: 'return "Hello " + name' }).waitFor();
    await diff.locator(".editor.modified .view-lines", { hasText: 'return f"Hello, {name}!"' }).waitFor();
    const buttons = await box.locator(".dialog-buttons .monaco-button").allInnerTexts();
    assert.deepEqual(
      buttons.map((b) => b.trim()).sort(),
      [
        "Allow for this session",
        "Allow once",
        `Always allow \`writeFile(./**)\` in ${realpathSync(run.workspace)}`,
        "Reject",
        "Reject for this session",
        "Stop Turn",
      ].sort(),
    );
    assert.match(await box.locator(".dialog-message-detail").innerText(), /greet\.py/);
    await chat.locator("#approval", { hasText: "Waiting for your approval" }).waitFor();
    await following(chat);
  });

  await step(page, "edit-allowed", async () => {
    await page.locator(".monaco-dialog-box .dialog-buttons .monaco-button", { hasText: /^Allow once$/ }).click();
    await chat.locator(".tool.completed", { hasText: "allowed once" }).waitFor({ timeout: TURN_MS });
    await idle(chat);
    assert.equal(workspaceFile("greet.py"), IMPROVED);
    // the preview closes with the answer
    await page.locator(".tab", { hasText: "Cody's proposed change" }).waitFor({ state: "detached", timeout: 10_000 });
  });

  await step(page, "edit-rejected", async () => {
    await ask(chat, "write greet.py: print('this must not be written')");
    await dialog(page, "Cody wants to change greet.py");
    await page.locator(".monaco-diff-editor .editor.modified .view-lines", { hasText: "this must not be written" }).waitFor();
    await page.locator(".monaco-dialog-box .dialog-buttons .monaco-button", { hasText: /^Reject$/ }).click();
    await chat.locator(".tool.failed", { hasText: "rejected" }).waitFor({ timeout: TURN_MS });
    await idle(chat);
    assert.equal(workspaceFile("greet.py"), IMPROVED, "a rejected edit leaves the file alone");
  });

  await step(page, "cancel", async () => {
    await ask(chat, "run sleep 47");
    await dialog(page, "Cody wants to run a command");
    await page.locator(".monaco-dialog-box .dialog-buttons .monaco-button", { hasText: /^Allow once$/ }).click();
    await chat.locator(".tool.in_progress", { hasText: "sleep 47" }).waitFor({ timeout: TURN_MS });
    const daemon = daemons()[0];
    assert.ok(daemon);
    await until(() => descendants(daemon.pid, ["sleep", "47"]).length > 0, 10_000, "the sleep to start");
    await chat.locator("#cancel:not([disabled])").click();
    await chat.locator(".notice", { hasText: "Turn cancelled." }).waitFor({ timeout: 20_000 });
    await idle(chat);
    await until(() => descendants(daemon.pid, ["sleep", "47"]).length === 0, 10_000, "the cancelled command's process to end");
    await chat.locator(".tool.failed", { hasText: "sleep 47" }).waitFor();
  });

  await step(page, "settings", async () => {
    await page.keyboard.press("Control+,");
    const search = page.locator(".settings-editor .settings-header .suggest-input-container textarea");
    await search.waitFor({ timeout: 20_000 });
    await search.fill("cody.approvalPolicy");
    const item = page.locator(".settings-editor .setting-item-contents", { hasText: "When Cody asks before running a command" });
    await item.waitFor({ timeout: 20_000 });
    await item.locator("select").selectOption("never");
    // a settings change restarts the daemon
    await until(() => !alive(first.pid), 15_000, "the first daemon to stop after the settings change");
  });

  await step(page, "after-settings", async () => {
    await runCommand(page, "View: Close All Editors");
    await showCody(page);
    await ask(chat, "run echo approved-by-policy");
    await chat.locator(".tool.completed", { hasText: "approved-by-policy" }).waitFor({ timeout: TURN_MS });
    await idle(chat);
    assert.equal(await page.locator(".monaco-dialog-box").count(), 0, "approvalPolicy never: no dialog");
    // the session went on in the new daemon
    assert.equal(await chat.locator(".message.user", { hasText: "read greet.py" }).count(), 1);
  });
  const running = daemons();
  assert.equal(running.length, 1, `one daemon after the restart: ${JSON.stringify(running)}`);
  const daemon = running[0];
  assert.ok(daemon && daemon.pid !== first.pid, "the settings change started a new daemon");
  result.secondDaemon = daemon.pid;

  await step(page, "reload", async () => {
    const host = daemon.ppid;
    const reloaded = page.waitForEvent("load", { timeout: 60_000 });
    const started = Date.now();
    await runCommand(page, "Developer: Reload Window");
    await until(() => !alive(daemon.pid), 10_000, "the daemon to exit after the reload", 5);
    const goneAt = Date.now();
    result.daemonGoneMs = goneAt - started;
    await until(() => !alive(host), 10_000, "the old extension host to exit");
    result.extensionHostGoneMs = Date.now() - started;
    // the new window restores the Cody view (a fresh chat), and no daemon runs until it is used
    await reloaded;
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    await chat.locator("#daemon", { hasText: "not started" }).waitFor({ timeout: 30_000 });
    assert.deepEqual(daemons(), [], "no daemon is left after the reload");
    // the old extension host's Cody log: this daemon's shutdown handshake, as the protocol
    // trace (cody.trace "verbose", the default) wrote it
    const log = codyLogOf(run.userDataDir, daemon.pid).split("\n");
    const ready = log.findIndex((line) => line.includes(`, pid ${String(daemon.pid)},`));
    const asked = log.findIndex((line, index) => index > ready && line.includes("Sending request 'shutdown"));
    assert.ok(ready >= 0 && asked > ready, "the shutdown is in the Cody log (the channel stays open until the daemon stopped)");
    const handshake = log.slice(asked).filter((line) => /(Sending|Received) (request|response|notification) '(shutdown|exit)/.test(line));
    result.shutdownLog = handshake;
    assert.match(handshake[1] ?? "", /Received response 'shutdown/, "the shutdown reply was handled (and traced)");
    assert.match(handshake[2] ?? "", /Sending notification 'exit'/, "then exit was sent (the log channel no longer throws)");
    // VS Code stamps log lines in local time; code-server and this script both run with TZ=UTC
    const at = (/** @type {string} */ line) => Date.parse(`${line.slice(0, 23).replace(" ", "T")}Z`);
    const asks = at(handshake[0] ?? "");
    result.shutdownToExitMs = at(handshake[2] ?? "") - asks;
    const exitedMs = goneAt - asks;
    result.shutdownToGoneMs = exitedMs;
    assert.ok(exitedMs < 1000, `the daemon exited ${String(exitedMs)} ms after VS Code asked it to shut down`);
  });
}

// ------------------------------------------------------------------ main

async function main() {
  const browser = await chromium.launch({ executablePath: run.chromium, args: CHROMIUM_FLAGS });
  try {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    /**
     * @param {import("playwright-core").Request | string} key
     * @param {string} url
     * @param {string} servedBy
     */
    const record = (key, url, servedBy) => {
      const parsed = new URL(url);
      if (["data:", "blob:", "about:"].includes(parsed.protocol)) return;
      requests.set(key, { url, host: parsed.hostname, servedBy });
    };
    context.on("request", (request) => {
      record(request, request.url(), "pending");
    });
    context.on("requestfinished", (request) => {
      void request.response().then((response) => {
        record(request, request.url(), response?.fromServiceWorker() ? "service worker" : "network");
      });
    });
    context.on("requestfailed", (request) => {
      record(request, request.url(), `failed: ${request.failure()?.errorText ?? "?"}`);
    });
    context.on("page", (page) => {
      page.on("websocket", (socket) => {
        record(`ws ${String(requests.size)}`, socket.url(), "network");
      });
    });
    const page = await context.newPage();
    try {
      await scenario(page);
    } catch (error) {
      await page.screenshot({ path: join(run.outDir, "failure.png") }).catch(() => undefined);
      throw error;
    }
    await context.close();
  } finally {
    await browser.close();
    result.requests = requestSummary();
    result.foreignRequests = foreignRequests();
    writeFileSync(join(run.outDir, "result.json"), JSON.stringify(result, null, 2));
  }
  assert.deepEqual(foreignRequests(), [], "the browser only ever talks to 127.0.0.1");
}

main().then(
  () => {
    process.exit(0);
  },
  (/** @type {unknown} */ error) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
