/** The pure pieces behind the VS Code UI: view model, approval dialog text, webview HTML, settings. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { STOP_TURN, describeApproval } from "../chat/approval";
import { initialState, reduce, type ChatState } from "../chat/state";
import { parseWebviewMessage, toViewModel } from "../chat/view";
import type { RequestPermissionParams } from "../protocol/types";
import { parseSettings } from "../settings";
import { chatHtml, contentSecurityPolicy, makeNonce } from "../webview/html";

const OPTIONS: RequestPermissionParams["options"] = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
  { optionId: "allow_always", name: "Allow for this session", kind: "allow_always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "reject_always", name: "Reject for this session", kind: "reject_always" },
];

function sampleState(): ChatState {
  const usage = { inputTokens: 1013, outputTokens: 103, totalTokens: 1116 };
  return [
    { type: "daemonReady" as const, initialize: { agentInfo: { name: "cody", title: "Cody", version: "0.1.0" }, _meta: { cody: { version: "0.1.0", extensions: [], providers: [], defaultProvider: "offline", dataDir: "/d", configFile: "/c" } } } },
    {
      type: "sessionOpened" as const,
      sessionId: "s",
      cwd: "/w",
      result: { modes: { currentModeId: "auto", availableModes: [] }, configOptions: [], _meta: { cody: { provider: "offline", model: "offline", sessionFile: "/f" } } },
    },
    { type: "promptStarted" as const, text: "run <b>x</b>" },
    { type: "sessionUpdate" as const, notification: { sessionId: "s", update: { sessionUpdate: "usage_update" as const, used: 337, size: 32768, cost: { amount: 0, currency: "USD" } } } },
    { type: "sessionUpdate" as const, notification: { sessionId: "s", update: { sessionUpdate: "tool_call" as const, toolCallId: "c1", title: "x", kind: "execute" as const, status: "failed" as const, content: [{ type: "content" as const, content: { type: "text" as const, text: "User denied approval" } }] } } },
    { type: "approvalResolved" as const, toolCallId: "c1", decision: "selected" as const, optionId: "reject_once" },
    { type: "promptFinished" as const, result: { stopReason: "end_turn" as const, _meta: { cody: { turnId: "t", usage: { last: usage, turn: usage, total: usage } } } } },
    { type: "error" as const, error: { kind: "daemon", message: "list failed", detail: ["why"] } },
  ].reduce(reduce, initialState());
}

describe("view model", () => {
  test("status chips, tool cards and errors", () => {
    const view = toViewModel(sampleState());
    assert.equal(view.daemon, "Cody 0.1.0 · ready");
    assert.deepEqual(view.status, ["offline · offline", "mode auto", "tokens 1,116 (in 1,013 · out 103, last turn 1,116)", "context 337/32,768 (1%)", "$0.0000"]);
    const tool = view.items.find((item) => item.type === "tool");
    assert.ok(tool?.type === "tool");
    assert.equal(tool.call.statusLabel, "failed");
    assert.equal(tool.call.decision, "rejected");
    assert.equal(tool.call.preview, "User denied approval");
    assert.deepEqual(view.errors, [{ message: "list failed", detail: "why" }]);
    assert.equal(view.items[0]?.type === "user" ? view.items[0].text : "", "run <b>x</b>", "text is passed as text, not HTML");
  });

  test("errors already in the transcript are not repeated in the banner", () => {
    const state = reduce(sampleState(), { type: "promptFailed", error: { kind: "auth", message: "No credentials", detail: [] } });
    const view = toViewModel(state);
    assert.deepEqual(
      view.errors.map((e) => e.message),
      ["list failed"],
    );
    assert.equal(view.items.at(-1)?.type, "error");
  });

  test("webview messages are validated", () => {
    assert.deepEqual(parseWebviewMessage({ type: "prompt", text: "hi" }), { type: "prompt", text: "hi" });
    assert.deepEqual(parseWebviewMessage({ type: "cancel", extra: 1 }), { type: "cancel" });
    assert.equal(parseWebviewMessage({ type: "prompt", text: 3 }), undefined);
    assert.equal(parseWebviewMessage({ type: "eval" }), undefined);
    assert.equal(parseWebviewMessage("prompt"), undefined);
  });
});

describe("approval dialog", () => {
  test("a command shows the command, cwd and a sandbox warning, with one button per option", () => {
    const prompt = describeApproval({
      sessionId: "s",
      toolCall: { toolCallId: "c", title: "rm -rf build", kind: "execute", content: [{ type: "content", content: { type: "text", text: "$ rm -rf build\ncwd: /w" } }] },
      options: OPTIONS,
      _meta: { cody: { requestId: "cody-1", sandboxed: false } },
    });
    assert.equal(prompt.message, "Cody wants to run a command");
    assert.match(prompt.detail, /\$ rm -rf build\ncwd: \/w/);
    assert.match(prompt.detail, /WITHOUT a sandbox/);
    assert.deepEqual(
      prompt.buttons.map((b) => [b.title, b.optionId]),
      [
        ["Allow once", "allow_once"],
        ["Allow for this session", "allow_always"],
        ["Reject", "reject_once"],
        ["Reject for this session", "reject_always"],
        [STOP_TURN, undefined],
      ],
    );
    assert.deepEqual(prompt.diffs, []);
  });

  test("an escalation says it leaves the sandbox and shows the project option's rule", () => {
    const project = { optionId: "allow_project", name: "Always allow `exec(npm install:*)` in /w", kind: "allow_always" as const };
    const prompt = describeApproval({
      sessionId: "s",
      toolCall: { toolCallId: "c", title: "npm install", kind: "execute", content: [{ type: "content", content: { type: "text", text: "$ npm install\ncwd: /w\n\nOUTSIDE THE SANDBOX\nReason given: it needs the registry" } }] },
      options: [...OPTIONS.slice(0, 2), project, ...OPTIONS.slice(2)],
      _meta: { cody: { requestId: "cody-2", sandboxed: false, justification: "it needs the registry", projectRules: ["exec(npm install:*)"], project: "/w" } },
    });
    assert.equal(prompt.message, "Cody wants to run a command outside the sandbox");
    assert.match(prompt.detail, /Reason given: it needs the registry/);
    assert.match(prompt.detail, /full access to your files and the network/);
    assert.match(prompt.detail, /saves exec\(npm install:\*\) for \/w/);
    assert.deepEqual(
      prompt.buttons.map((b) => b.optionId),
      ["allow_once", "allow_always", "allow_project", "reject_once", "reject_always", undefined],
    );
  });

  test("an edit names the file and points at the diff editor", () => {
    const prompt = describeApproval({
      sessionId: "s",
      toolCall: { toolCallId: "c", title: "Write x.txt", kind: "edit", content: [{ type: "diff", path: "/w/x.txt", oldText: "a\nb\n", newText: "a\nb\nc\n" }] },
      options: OPTIONS,
    });
    assert.equal(prompt.message, "Cody wants to change x.txt");
    assert.match(prompt.detail, /\/w\/x\.txt: 2 → 3 lines/);
    assert.match(prompt.detail, /diff editor/);
    assert.equal(prompt.diffs.length, 1);
  });
});

describe("webview HTML", () => {
  test("a strict CSP where only the nonced module runs", () => {
    const nonce = makeNonce();
    assert.match(nonce, /^[A-Za-z0-9]{16,}$/);
    assert.notEqual(nonce, makeNonce());
    const html = chatHtml({ cspSource: "vscode-webview://x", nonce, scriptUri: "vscode-webview://x/main.js", styleUri: "vscode-webview://x/chat.css" });
    const csp = contentSecurityPolicy("vscode-webview://x", nonce);
    assert.ok(html.includes(`content="${csp}"`));
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, new RegExp(`script-src 'nonce-${nonce}'`));
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    const scripts = html.match(/<script[^>]*>/g) ?? [];
    assert.deepEqual(scripts, [`<script type="module" nonce="${nonce}" src="vscode-webview://x/main.js">`]);
  });
});

describe("settings", () => {
  test("defaults", () => {
    const settings = parseSettings({ command: undefined, env: undefined, provider: "", model: "", approvalPolicy: "", sandboxMode: "", trace: undefined }, { PATH: "/bin" }, "/w");
    assert.deepEqual(settings.daemon, { command: "cody-daemon", args: [], env: { PATH: "/bin" }, cwd: "/w" });
    assert.deepEqual(settings.sessionMeta, {});
    assert.equal(settings.trace, "verbose");
    assert.deepEqual(settings.problems, []);
  });

  test("command, env overrides and session options", () => {
    const settings = parseSettings(
      {
        command: ["/venv/bin/python", "-m", "cody_daemon"],
        env: { OPENAI_API_KEY: "k", DROP: null },
        provider: " openai ",
        model: "gpt-x",
        approvalPolicy: "never",
        sandboxMode: "read-only",
        trace: "off",
      },
      { PATH: "/bin", DROP: "x" },
      undefined,
    );
    assert.deepEqual(settings.daemon, { command: "/venv/bin/python", args: ["-m", "cody_daemon"], env: { PATH: "/bin", OPENAI_API_KEY: "k" } });
    assert.deepEqual(settings.sessionMeta, { provider: "openai", model: "gpt-x", approvalPolicy: "never", sandboxMode: "read-only" });
    assert.equal(settings.trace, "off");
  });

  test("bad values are reported and ignored", () => {
    const settings = parseSettings({ command: "cody-daemon --x", env: { N: 3 }, provider: 1, model: null, approvalPolicy: "sometimes", sandboxMode: "none", trace: "loud" }, {}, undefined);
    assert.equal(settings.daemon.command, "cody-daemon");
    assert.deepEqual(settings.sessionMeta, {});
    assert.equal(settings.problems.length, 4);
    assert.match(settings.problems.join("\n"), /cody\.daemon\.command/);
    assert.match(settings.problems.join("\n"), /cody\.approvalPolicy must be one of/);
  });

  test("the backend setting picks whose agent loop runs new sessions", () => {
    const base = { command: undefined, env: undefined, provider: "", model: "", approvalPolicy: "", sandboxMode: "", trace: undefined };
    assert.deepEqual(parseSettings({ ...base, backend: "claude" }, {}, undefined).sessionMeta, { backend: "claude" });
    const bad = parseSettings({ ...base, backend: "gemini" }, {}, undefined);
    assert.deepEqual(bad.sessionMeta, {});
    assert.match(bad.problems.join("\n"), /cody\.backend must be one of native, codex, claude/);
  });
});
