/**
 * Issue 20.5: text from the model, tools and session files is shown inert in VS Code: no
 * control or bidi character reaches the webview, the approval dialog, a quick pick, the diff
 * editor's title or the log, a title stays one line, and no conversation text is ever HTML.
 * Pure checks, then the extension against the real daemon (offline model, "run CMD").
 */

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, describe, test } from "node:test";

import { describeApproval } from "../chat/approval";
import { initialState, reduce } from "../chat/state";
import { toViewModel } from "../chat/view";
import type { HostMessage } from "../chat/view-model";
import { inert, inertDeep, oneLine, pickLabel } from "../inert";
import type { RequestPermissionParams } from "../protocol/types";
import { TestEnv, daemonArgv, waitFor, within } from "./support/daemon";
import { Uri, fake, installFakeVscode, type ModalCall } from "./support/fake-vscode";

installFakeVscode();

const FORGED = "touch PWNED;: \u001b[14Dls -la\u001b[K";
const FORGED_SHOWN = "touch PWNED;: ␛[14Dls -la␛[K";
const HOSTILE = "\u001b]52;c;Q09EWS1QV05FRA==\u0007\u001b]0;owned\u0007 abc\u202edcba\u202c \u009b2J";
const HOSTILE_SHOWN = "␛]52;c;Q09EWS1QV05FRA==␇␛]0;owned␇ abc<U+202E>dcba<U+202C> <U+009B>2J";
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** Every string inside `value` (walked like JSON), with where it is. */
function strings(value: unknown, at = "$"): [string, string][] {
  if (typeof value === "string") return [[at, value]];
  if (Array.isArray(value)) return value.flatMap((item, index) => strings(item, `${at}[${String(index)}]`));
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(([key, item]) => strings(item, `${at}.${key}`));
  return [];
}

function assertInert(value: unknown, what: string): void {
  const raw = strings(value).filter(([, text]) => RAW.test(text));
  assert.deepEqual(raw, [], `${what} holds raw control characters`);
}

describe("the sanitizer", () => {
  test("shows every control, keeps newlines and tabs in text, not on one line", () => {
    assert.equal(inert(FORGED), FORGED_SHOWN);
    assert.equal(inert(HOSTILE), HOSTILE_SHOWN);
    assert.equal(inert("a\r\n\tb\rc\u0000\u007f"), "a\n\tb␍c␀␡");
    assert.equal(oneLine("ls\nWARNING\tx"), "ls␊WARNING␉x");
    assert.equal(inert("lone \ud800 and pair \ud83d\ude00"), "lone <U+D800> and pair \ud83d\ude00");
    for (const text of [FORGED, HOSTILE]) {
      assert.equal(inert(inert(text)), inert(text));
      assert.equal(oneLine(oneLine(text)), oneLine(text));
    }
    assert.deepEqual(inertDeep({ a: [FORGED], b: 1, c: null }), { a: [FORGED_SHOWN], b: 1, c: null });
    assert.equal(pickLabel("$(check) done\nx"), "\\$(check) done␊x");
  });

  test("the approval dialog shows the command that runs", () => {
    const request: RequestPermissionParams = {
      sessionId: "s",
      toolCall: {
        toolCallId: "c1",
        title: `${FORGED}\nfake`,
        kind: "other",
        content: [{ type: "content", content: { type: "text", text: `$ ${FORGED}\ncwd: /w ${HOSTILE}` } }],
      },
      options: [{ optionId: "allow_once", name: "Allow\nonce", kind: "allow_once" }],
    };
    const prompt = describeApproval(request);
    assertInert({ message: prompt.message, detail: prompt.detail, buttons: prompt.buttons }, "the dialog");
    assert.equal(prompt.message, `Cody wants to use ${FORGED_SHOWN}␊fake`);
    assert.equal(prompt.detail, `$ ${FORGED_SHOWN}\ncwd: /w ${HOSTILE_SHOWN}`);
    assert.equal(prompt.buttons[0]?.title, "Allow␊once");
  });

  test("every string of the view model is inert, titles one line", () => {
    const update = (value: object): Parameters<typeof reduce>[1] => ({ type: "sessionUpdate", notification: { sessionId: "s", update: value } }) as Parameters<typeof reduce>[1];
    const state = [
      { type: "sessionLoading", sessionId: "s", cwd: "/w", title: `title ${HOSTILE}\nfake` } as Parameters<typeof reduce>[1],
      { type: "promptStarted", text: `run ${FORGED}` } as Parameters<typeof reduce>[1],
      update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: HOSTILE } }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: HOSTILE } }),
      update({ sessionUpdate: "tool_call", toolCallId: "c1", title: `${FORGED}\n✓ fake`, kind: "execute", status: "completed", content: [{ type: "content", content: { type: "text", text: HOSTILE } }] }),
      update({ sessionUpdate: "plan", entries: [{ content: `step\n${HOSTILE}`, status: "pending", priority: "medium" }] }),
    ].reduce(reduce, initialState());
    const view = toViewModel(state);
    assertInert(view, "the view model");
    const tool = view.items.find((item) => item.type === "tool");
    assert.ok(tool?.type === "tool");
    assert.equal(tool.call.title, `${FORGED_SHOWN}␊✓ fake`);
    assert.equal(tool.call.preview, HOSTILE_SHOWN);
    assert.ok(view.items.some((item) => item.type === "agent" && item.text === HOSTILE_SHOWN));
    assert.equal(view.plan[0]?.content, `step␊${HOSTILE_SHOWN}`);
  });

  test("the webview never builds HTML from text", () => {
    const src = resolve(__dirname, "..", "..", "src");
    const sinks = /\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment|srcdoc|setHTML/;
    for (const dir of ["webview-ui", "webview"]) {
      for (const file of readdirSync(join(src, dir))) {
        const text = readFileSync(join(src, dir, file), "utf8");
        assert.doesNotMatch(text, sinks, `${dir}/${file} writes HTML`);
      }
    }
  });
});

const env = new TestEnv();
after(() => {
  env.cleanup();
});

test("through the real daemon: the dialog, the chat, the session picker, the diff title and the log", { timeout: 120_000 }, async () => {
  fake.workspaceFolder = env.workspace;
  fake.configuration = {
    "cody.daemon.command": daemonArgv(),
    "cody.daemon.env": { HOME: env.env.HOME, CODY_HOME: env.codyHome, TMPDIR: env.env.TMPDIR, CODEX_HOME: env.env.CODEX_HOME, CLAUDE_CONFIG_DIR: env.env.CLAUDE_CONFIG_DIR, OPENAI_API_KEY: null, ANTHROPIC_API_KEY: null, OPENROUTER_API_KEY: null },
    // the ask mode: every command and edit here asks (under the default a sandboxed one runs unasked)
    "cody.approvalPolicy": "untrusted",
  };
  const modals: ModalCall[] = [];
  let answer = "Allow once";
  fake.answerModal = (call) => {
    modals.push(call);
    return call.items.find((item) => item.title === answer);
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const extension = require("../extension") as { activate(context: unknown): void; deactivate(): Promise<void> };
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: Uri.file(resolve(__dirname, "..", "..")) };
  extension.activate(context);
  try {
    const provider = fake.viewProviders.get("cody.chat");
    assert.ok(provider);
    const { view, posted, receive } = fake.createWebviewView();
    provider.resolveWebviewView(view);
    receive({ type: "ready" });
    await waitFor(() => posted.length > 0, 5_000, "initial state");
    const idle = (): boolean => (posted.at(-1) as HostMessage | undefined)?.view.busy === false;

    // a forged command: the dialog shows what runs, and that is what runs
    receive({ type: "prompt", text: `run ${FORGED}` });
    await waitFor(() => modals.length === 1 && idle(), 60_000, "the forged command's turn");
    const [forged] = modals;
    assert.ok(forged);
    assert.equal(forged.message, "Cody wants to run a command");
    assert.match(forged.options.detail ?? "", new RegExp(`^\\$ ${FORGED_SHOWN.replace(/[[\]$;]/g, "\\$&")}\\ncwd: `));
    assertInert(forged, "the dialog");
    assert.ok(existsSync(join(env.workspace, "PWNED")), "the command that was shown ran");

    // a command printing sequences, and a file whose name reorders its line
    receive({ type: "prompt", text: String.raw`run printf '\033]52;c;Q09EWS1QV05FRA==\007\033]0;owned\007 abc\342\200\256dcba\342\200\254 \302\2332J'` });
    await waitFor(() => modals.length === 2 && idle(), 60_000, "the output turn");
    answer = "Reject";
    receive({ type: "prompt", text: "write a\u202etxt.md: hi" });
    await waitFor(() => modals.length === 3 && idle(), 60_000, "the edit turn");
    const diff = fake.calls.find((call) => call.kind === "command:vscode.diff");
    assert.ok(diff);
    assert.equal(diff.args[2], "a<U+202E>txt.md (new file) ↔ Cody's proposed change");
    assertInert(modals, "the dialogs");

    const views = posted.map((message) => (message as HostMessage).view);
    assertInert(views, "the chat webview");
    const last = views.at(-1);
    assert.ok(last?.items.some((item) => item.type === "tool" && item.call.preview.includes(HOSTILE_SHOWN)), JSON.stringify(last?.items));

    // the session picker: the titles come from the first prompts
    fake.answerQuickPick = () => undefined;
    await within(Promise.resolve(fake.commands.get("cody.sessions")?.()), 30_000, "sessions");
    const picks = fake.calls.filter((call) => call.kind === "quickPick").at(-1)?.args[0] as { label: string; detail: string }[];
    assert.ok(picks.some((item) => item.label === `run ${FORGED_SHOWN}`), JSON.stringify(picks));
    assertInert(picks.map((item) => ({ label: item.label, detail: item.detail })), "the session picker");
    assertInert(fake.log, "the log channel");
  } finally {
    const deactivated = extension.deactivate();
    for (const disposable of context.subscriptions) disposable.dispose();
    await within(deactivated, 15_000, "deactivate");
  }
});
