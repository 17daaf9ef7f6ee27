// @ts-check
/**
 * How the VS Code e2e driver works the workbench, as a user does: the activity bar, the
 * Command Palette, VS Code's modal dialog, and the Cody chat webview (nested in two iframes).
 */

import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** @typedef {import("playwright-core").Page} Page */
/** @typedef {import("playwright-core").FrameLocator} FrameLocator */

/** How long a turn may take. */
export const TURN_MS = 60_000;

/**
 * The chat webview's document (VS Code nests it in two iframes).
 * @param {Page} page
 * @returns {FrameLocator}
 */
export function chatFrame(page) {
  return page.locator("iframe.webview.ready").contentFrame().locator("iframe#active-frame").contentFrame();
}

/**
 * Show the Cody view (clicking its activity bar icon when the view is not already shown: a
 * click on the active icon would hide the side bar).
 * @param {Page} page
 */
export async function showCody(page) {
  const icon = page.locator(".activitybar li.action-item", { has: page.locator('a.action-label[aria-label="Cody"]') });
  await icon.waitFor({ timeout: 30_000 });
  if (!((await icon.getAttribute("class")) ?? "").includes("checked")) await icon.click();
}

/**
 * The transcript shows its newest line (the chat follows the conversation).
 * @param {FrameLocator} chat
 */
export async function following(chat) {
  const transcript = chat.locator("#transcript");
  const deadline = Date.now() + 5_000;
  for (;;) {
    const gap = await transcript.evaluate((node) => node.scrollHeight - node.scrollTop - node.clientHeight);
    if (gap <= 2) return;
    if (Date.now() > deadline) throw new Error(`the chat stopped following: its newest ${String(gap)} px are scrolled out of view`);
    await sleep(50);
  }
}

/**
 * Run a command from the Command Palette, as a user does.
 * @param {Page} page
 * @param {string} title
 */
export async function runCommand(page, title) {
  await page.locator(".command-center-center").click();
  const input = page.locator(".quick-input-widget .quick-input-box input");
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: title }).waitFor();
  await input.press("Enter");
}

/**
 * @param {Page} page
 * @param {string} path
 */
export async function screenshot(page, path) {
  await page.mouse.move(1000, 700); // no hover tooltips in the picture
  await page.screenshot({ path });
  return path;
}

/**
 * Send a prompt from the chat's prompt box.
 * @param {FrameLocator} chat
 * @param {string} text
 */
export async function ask(chat, text) {
  const box = chat.locator("#prompt");
  await box.fill(text);
  await box.press("Enter");
  await chat.locator(".message.user", { hasText: text.split("\n")[0] }).last().waitFor({ timeout: 10_000 });
}

/**
 * The turn is over (Send is enabled again) and the chat shows its end.
 * @param {FrameLocator} chat
 */
export async function idle(chat) {
  await chat.locator("#send:not([disabled])").waitFor({ timeout: TURN_MS });
  await following(chat);
}

/**
 * VS Code's modal dialog, once it shows `message`.
 * @param {Page} page
 * @param {string} message
 */
export async function dialog(page, message) {
  const box = page.locator(".monaco-dialog-box");
  await box.locator(".dialog-message-text", { hasText: message }).waitFor({ timeout: TURN_MS });
  return box;
}

/**
 * The Cody log of the extension host that ran daemon `pid` (VS Code writes each log channel
 * to a file under the user data dir).
 * @param {string} userDataDir
 * @param {number} pid
 * @returns {string}
 */
export function codyLogOf(userDataDir, pid) {
  const logs = join(userDataDir, "logs");
  for (const session of readdirSync(logs)) {
    for (const host of readdirSync(join(logs, session))) {
      const file = join(logs, session, host, "cody.cody-vscode", "Cody.log");
      let text;
      try {
        text = readFileSync(file, "utf8");
      } catch {
        continue;
      }
      if (text.includes(`, pid ${String(pid)},`)) return text;
    }
  }
  return "";
}
