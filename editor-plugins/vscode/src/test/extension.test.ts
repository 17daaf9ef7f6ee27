/**
 * The extension glue (`out/extension.js`) activated against a stand-in `vscode` module and
 * the real daemon: commands, the chat webview, approvals as a modal with the diff editor
 * opened first, the session picker, restart on a settings change, and shutdown on deactivate.
 */

import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, test } from "node:test";

import type { ChatViewModel, HostMessage, ViewToolCall } from "../chat/view-model";
import { TestEnv, daemonArgv, waitFor, within } from "./support/daemon";
import { Uri, fake, fakeEditor, installFakeVscode, type FakeWebviewView, type ModalCall } from "./support/fake-vscode";

installFakeVscode();

interface ExtensionModule {
  activate(context: { subscriptions: { dispose(): unknown }[]; extensionUri: Uri }): void;
  deactivate(): Promise<void>;
}

const env = new TestEnv();
after(() => {
  env.cleanup();
});

function readFileText(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

function lastView(posted: unknown[]): ChatViewModel | undefined {
  const message = posted.at(-1) as HostMessage | undefined;
  return message?.view;
}

function tools(view: ChatViewModel | undefined): ViewToolCall[] {
  return (view?.items ?? []).flatMap((item) => (item.type === "tool" ? [item.call] : []));
}

function daemonPids(): number[] {
  return fake.log.flatMap((line) => {
    const match = /Daemon ready: .*, pid (\d+)/.exec(line);
    return match?.[1] ? [Number(match[1])] : [];
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test("the extension drives the real daemon through VS Code's UI", { timeout: 120_000 }, async () => {
  const root = resolve(__dirname, "..", "..");
  const removeKeys = Object.fromEntries(["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"].map((k) => [k, null]));
  fake.workspaceFolder = env.workspace;
  fake.configuration = {
    "cody.daemon.command": daemonArgv(),
    "cody.daemon.env": { ...removeKeys, HOME: env.env.HOME, CODY_HOME: env.codyHome, TMPDIR: env.env.TMPDIR, CODEX_HOME: env.env.CODEX_HOME, CLAUDE_CONFIG_DIR: env.env.CLAUDE_CONFIG_DIR },
    "cody.trace": "messages",
    // the `ask` mode's policy: the edit in the workspace below asks
    "cody.approvalPolicy": "untrusted",
  };
  const modals: ModalCall[] = [];
  let answer = "Reject";
  fake.answerModal = (call) => {
    modals.push(call);
    return call.items.find((item) => item.title === answer);
  };

  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const extension = require("../extension") as ExtensionModule;
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: Uri.file(root) };
  extension.activate(context);
  try {
    for (const id of ["cody.newSession", "cody.sendPrompt", "cody.cancel", "cody.sessions", "cody.rewind", "cody.undo", "cody.processes", "cody.showLog", "cody.addFile"]) {
      assert.ok(fake.commands.has(id), `command ${id} is registered`);
    }
    const declared = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { contributes: { commands: { command: string }[] } }).contributes.commands;
    assert.deepEqual(
      declared.map((c) => c.command).sort(),
      [...fake.commands.keys()].sort(),
      "package.json declares exactly the registered commands",
    );

    // the chat view: strict CSP, its script exists, and it gets the state when ready
    const provider = fake.viewProviders.get("cody.chat");
    assert.ok(provider, "the chat view provider is registered");
    const { view, posted, receive }: { view: FakeWebviewView; posted: unknown[]; receive: (m: unknown) => void } = fake.createWebviewView();
    provider.resolveWebviewView(view);
    const nonce = /script-src 'nonce-([A-Za-z0-9]+)'/.exec(view.webview.html)?.[1];
    assert.ok(nonce, "CSP with a script nonce");
    const script = /<script type="module" nonce="[^"]+" src="vscode-webview:\/\/([^"]+)">/.exec(view.webview.html)?.[1];
    assert.ok(script && existsSync(script), `the webview script exists: ${String(script)}`);
    assert.ok(existsSync(join(root, "media", "chat.css")));
    receive({ type: "ready" });
    await waitFor(() => posted.length > 0, 5_000, "initial state posted");

    // a rejected edit: the diff editor opens before the modal, and the file is not written
    await within(Promise.resolve(fake.commands.get("cody.sendPrompt")?.("write x.txt: hi")), 60_000, "sendPrompt");
    const diffIndex = fake.calls.findIndex((c) => c.kind === "command:vscode.diff");
    const modalIndex = fake.calls.findIndex((c) => c.kind === "modal");
    assert.ok(diffIndex >= 0 && diffIndex < modalIndex, "the diff is shown before the modal");
    const [left, right] = fake.calls[diffIndex]?.args as [Uri, Uri];
    const diffs = fake.contentProviders.get("cody-diff");
    assert.ok(diffs);
    assert.equal(left.path, join(env.workspace, "x.txt"));
    assert.ok(fake.calls.some((c) => c.kind === "closeTabs"), "the diff editor is closed after the answer");
    const [edit] = modals;
    assert.ok(edit);
    assert.equal(edit.message, "Cody wants to change x.txt");
    assert.equal(edit.options.modal, true);
    assert.match(edit.options.detail ?? "", /x\.txt: new file, 1 lines/);
    assert.deepEqual(
      edit.items.map((i) => i.title),
      [
        "Allow once",
        "Allow for this session",
        `Always allow \`writeFile(./**)\` in ${env.workspace}`,
        "Reject",
        "Reject for this session",
        "Stop Turn",
      ],
    );
    assert.equal(diffs.provideTextDocumentContent(right), "", "the preview documents are released after the answer");
    assert.equal(existsSync(join(env.workspace, "x.txt")), false);
    await waitFor(() => tools(lastView(posted)).at(-1)?.status === "failed", 5_000, "failed edit shown");
    assert.equal(tools(lastView(posted)).at(-1)?.decision, "rejected");

    // a prompt from the webview's prompt box; the command is allowed in the modal
    answer = "Allow once";
    receive({ type: "prompt", text: "run outside echo from-webview" });
    await waitFor(() => tools(lastView(posted)).at(-1)?.status === "completed" && lastView(posted)?.busy === false, 60_000, "allowed command shown");
    const run = modals.at(-1);
    assert.ok(run);
    assert.equal(run.message, "Cody wants to run a command outside the sandbox");
    assert.match(run.options.detail ?? "", /Reason given: you asked to run it outside the sandbox/);
    assert.match(run.options.detail ?? "", /\$ echo from-webview\ncwd: /);
    const done = lastView(posted);
    assert.ok(done);
    assert.match(tools(done).at(-1)?.preview ?? "", /from-webview/);
    assert.ok(done.status.some((chip) => chip.startsWith("tokens ")), "token usage is shown");
    assert.ok(fake.log.some((line) => line.includes("session/prompt")), "the protocol trace reaches the log channel");

    // a command the model started in the background: listed by "Processes…", stopped there
    const marker = `62.${String(process.pid)}`;
    receive({ type: "prompt", text: `start sleep ${marker}` });
    await waitFor(() => tools(lastView(posted)).length === 3 && lastView(posted)?.busy === false, 60_000, "background command started");
    let listed: { label: string; description: string; process: { pid: number; processId: number } }[] = [];
    fake.answerQuickPick = (items) => {
      listed = items as typeof listed;
      return items[0];
    };
    await within(Promise.resolve(fake.commands.get("cody.processes")?.()), 30_000, "processes");
    const [item] = listed;
    assert.ok(item, "the process is listed");
    assert.equal(item.label, `${String(item.process.processId)}  sleep ${marker}`);
    assert.match(item.description, /^running · pid \d+ · background$/);
    await waitFor(() => !alive(item.process.pid), 10_000, "the process is stopped");
    assert.ok(
      fake.calls.some((c) => c.kind === "information" && String(c.args[0]).includes(`stopped process ${String(item.process.processId)} (killed by SIGTERM)`)),
      "the stop is announced",
    );

    // the session picker replays a stored session
    fake.answerQuickPick = (items) => items.find((item) => (item as { label: string }).label === "write x.txt: hi");
    await within(Promise.resolve(fake.commands.get("cody.sessions")?.()), 30_000, "sessions");
    assert.ok(fake.calls.some((c) => c.kind === "quickPick"));
    await waitFor(() => lastView(posted)?.title === "write x.txt: hi" && lastView(posted)?.loading === false, 10_000, "replayed");

    // rewind: the picker lists each turn's prompt and files; a conflict is overwritten only
    // after the modal; the chat says what was restored
    const notes = join(env.workspace, "notes.txt");
    receive({ type: "prompt", text: "write notes.txt: first" });
    await waitFor(() => readFileText(notes) === "first" && lastView(posted)?.busy === false, 60_000, "first write");
    receive({ type: "prompt", text: "write notes.txt: second" });
    await waitFor(() => readFileText(notes) === "second" && lastView(posted)?.busy === false, 60_000, "second write");
    const picks: unknown[][] = [];
    fake.answerQuickPick = (items) => {
      picks.push(items);
      const checkpoint = items.find((item) => (item as { checkpoint?: { prompt: string } }).checkpoint?.prompt === "write notes.txt: second");
      return checkpoint ?? items.find((item) => (item as { restore?: string }).restore === "files");
    };
    await within(Promise.resolve(fake.commands.get("cody.rewind")?.()), 30_000, "rewind");
    assert.equal(readFileText(notes), "first", "the second turn's write is undone");
    const labels = (picks[0] as { label: string; detail: string }[]).map((item) => `${item.label} | ${item.detail}`);
    assert.ok(labels.includes("turn 5 · write notes.txt: second | M notes.txt"), labels.join("\n"));
    assert.ok(labels.includes("turn 4 · write notes.txt: first | A notes.txt"), labels.join("\n"));
    await waitFor(
      () => JSON.stringify(lastView(posted)?.items ?? []).includes("Rewound to before turn 5 “write notes.txt: second”; 1 file(s) restored"),
      5_000,
      "the chat says what was restored",
    );

    writeFileSync(notes, "edited by hand\n");
    answer = "Overwrite";
    const modalsBefore = modals.length;
    await within(Promise.resolve(fake.commands.get("cody.undo")?.()), 30_000, "undo");
    const conflict = modals.at(-1);
    assert.ok(modals.length === modalsBefore + 1 && conflict, "the conflict was asked about");
    assert.match(conflict.message, /1 file\(s\) changed since the checkpoint by someone else/);
    assert.equal(conflict.options.detail, "notes.txt");
    assert.equal(readFileText(notes), "first", "overwritten after the modal");

    // a settings change restarts the daemon
    const [firstPid] = daemonPids();
    assert.ok(firstPid && alive(firstPid));
    fake.configuration["cody.approvalPolicy"] = "never";
    fake.configurationChanged.fire({ affectsConfiguration: (section) => section === "cody" });
    await waitFor(() => daemonPids().length === 2, 30_000, "daemon restarted");
    await waitFor(() => !alive(firstPid), 10_000, "old daemon gone");
  } finally {
    // as VS Code does: deactivate() is called, then the subscriptions are disposed at once,
    // without waiting for it
    const deactivated = extension.deactivate();
    for (const disposable of context.subscriptions) disposable.dispose();
    await within(deactivated, 15_000, "deactivate");
  }
  const pids = daemonPids();
  assert.ok(pids.length > 0);
  for (const pid of pids) assert.equal(alive(pid), false, `daemon ${String(pid)} stopped on deactivate`);
});

test("shutdown with the default verbose trace sends exit although VS Code disposed the subscriptions", { timeout: 60_000 }, async () => {
  // the regression: the log channel was a subscription, closed while deactivate() waited for the
  // `shutdown` reply; tracing that reply threw `Channel has been closed`, so `exit` was never
  // sent and the daemon was killed after 5 s
  fake.log.length = 0;
  fake.calls.length = 0;
  fake.workspaceFolder = env.workspace;
  fake.configuration = {
    "cody.daemon.command": daemonArgv(),
    "cody.daemon.env": { HOME: env.env.HOME, CODY_HOME: env.codyHome, TMPDIR: env.env.TMPDIR },
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const extension = require("../extension") as ExtensionModule;
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: Uri.file(resolve(__dirname, "..", "..")) };
  extension.activate(context);
  await within(Promise.resolve(fake.commands.get("cody.newSession")?.()), 30_000, "newSession");
  const [pid] = daemonPids();
  assert.ok(pid && alive(pid));

  const started = Date.now();
  const deactivated = extension.deactivate();
  for (const disposable of context.subscriptions) disposable.dispose();
  await within(deactivated, 15_000, "deactivate");
  assert.ok(Date.now() - started < 4_000, `deactivate took ${String(Date.now() - started)} ms: the daemon was killed, not stopped`);
  assert.equal(alive(pid), false);
  assert.ok(fake.log.some((line) => line.includes("Sending notification 'exit'")), "exit was sent (verbose trace)");
  assert.ok(fake.log.some((line) => /Daemon stopped \(exit code 0\)/.test(line)), fake.log.filter((l) => l.includes("Daemon")).join("\n"));
  assert.ok(fake.calls.some((call) => call.kind === "disposeLog"), "the log channel is disposed at the end of deactivate");
});

test("Add File to Cody Chat, dropped files and a selection attach; a background turn is notified", { timeout: 120_000 }, async () => {
  fake.log.length = 0;
  fake.calls.length = 0;
  const files = new TestEnv();
  files.writeFiles({ "notes.txt": "one\ntwo\nthree\n", "bin.dat": "\u0000\u00ff" });
  writeFileSync(join(files.workspace, "bin.dat"), Buffer.from([0xff, 0xfe, 0x00]));
  fake.workspaceFolder = files.workspace;
  fake.configuration = {
    "cody.daemon.command": daemonArgv(),
    "cody.daemon.env": { HOME: files.env.HOME, CODY_HOME: files.codyHome, TMPDIR: files.env.TMPDIR },
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const extension = require("../extension") as ExtensionModule;
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: Uri.file(resolve(__dirname, "..", "..")) };
  extension.activate(context);
  try {
    const provider = fake.viewProviders.get("cody.chat");
    assert.ok(provider);
    const { view, posted, receive } = fake.createWebviewView();
    provider.resolveWebviewView(view);
    receive({ type: "ready" });
    await waitFor(() => posted.length > 0, 5_000, "initial state posted");

    const notes = Uri.file(join(files.workspace, "notes.txt"));
    await fake.commands.get("cody.addFile")?.(notes, [notes]);
    receive({ type: "addFiles", uris: [Uri.file(join(files.workspace, "bin.dat")).toString(), "https://evil.example/x"] });
    fake.activeTextEditor = fakeEditor(join(files.workspace, "notes.txt"), [1, 2]);
    await fake.commands.get("cody.addFile")?.();
    await waitFor(() => (lastView(posted)?.attachments.length ?? 0) === 2, 5_000, "attachments shown");
    assert.deepEqual(lastView(posted)?.attachments, ["notes.txt", "notes.txt:2-3"]);
    assert.ok(
      fake.calls.some((c) => c.kind === "warning" && /bin\.dat: not UTF-8 text/.test(String(c.args[0]))),
      "a binary file is refused with a message",
    );

    fake.focused = false; // the window is in the background when the turn ends
    await within(Promise.resolve(fake.commands.get("cody.sendPrompt")?.("hello")), 60_000, "sendPrompt");
    await waitFor(() => lastView(posted)?.busy === false && (lastView(posted)?.attachments.length ?? 1) === 0, 10_000, "sent with the files");
    await waitFor(() => fake.calls.some((c) => c.kind === "information" && c.args[0] === "Cody: turn ended (end_turn)"), 5_000, "notified");
  } finally {
    fake.focused = true;
    fake.activeTextEditor = undefined;
    const deactivated = extension.deactivate();
    for (const disposable of context.subscriptions) disposable.dispose();
    await within(deactivated, 15_000, "deactivate");
    files.cleanup();
  }
});
