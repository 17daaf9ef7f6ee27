/**
 * Activation: wires the vscode-free chat controller to VS Code (webview view, commands,
 * approval dialogs, diff previews, settings, log channel).
 *
 * "Add File to Cody Chat" (Explorer, editor and editor tab menus; a selection sends just
 * those lines) and files dropped on the chat attach them to the next message. A turn that
 * ends while the window is in the background, or after a long turn, is said with a
 * notification (as is an approval that waits in a background window).
 *
 * Invariants: one daemon per window, started on first use and restarted when a `cody.*`
 * setting changes (never in a loop after a crash); it is shut down on deactivate. The log
 * channel outlives the daemon: it is not one of the context's subscriptions (VS Code disposes
 * those while `deactivate()` is still running) but disposed at the end of `deactivate()`, and
 * every write goes through `safeLog`, so logging never throws.
 */

import { homedir } from "node:os";

import * as vscode from "vscode";

import { ChatController, type ControllerOptions } from "./chat/controller";
import { attachFiles } from "./editor/attach";
import type { ChatState } from "./chat/state";
import type { WebviewMessage } from "./chat/view-model";
import { createApprovalUi } from "./editor/approvals";
import { ChatViewProvider } from "./editor/chatView";
import { DiffContentProvider } from "./editor/diffContent";
import { safeLog, type CodyLog } from "./editor/log";
import { pickLabel } from "./inert";
import type { Tracer } from "vscode-jsonrpc/node";
import { describeExit } from "./protocol/process";
import type { SessionInfo } from "./protocol/types";
import { parseSettings, type Settings } from "./settings";

let controller: ChatController | undefined;

/** A turn this long ends with a notification even in a focused window. */
const LONG_TURN_MS = 5000;

/** The files an Explorer or tab menu passes (`uri`, `[uris]`); none from the editor menu. */
function pickedUris(target: unknown, all: unknown): vscode.Uri[] {
  if (Array.isArray(all)) return all.filter((uri): uri is vscode.Uri => uri instanceof vscode.Uri);
  return target instanceof vscode.Uri ? [target] : [];
}
let channel: CodyLog | undefined;

function workspaceCwd(): string {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? homedir();
}

function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration("cody");
  return parseSettings(
    {
      command: config.get<unknown>("daemon.command"),
      env: config.get<unknown>("daemon.env"),
      provider: config.get<unknown>("provider"),
      model: config.get<unknown>("model"),
      approvalPolicy: config.get<unknown>("approvalPolicy"),
      sandboxMode: config.get<unknown>("sandboxMode"),
      backend: config.get<unknown>("backend"),
      trace: config.get<unknown>("trace"),
    },
    process.env,
    workspaceCwd(),
  );
}

function logStderr(log: CodyLog, line: string): void {
  if (/\b(ERROR|CRITICAL)\b|Traceback/.test(line)) log.error(`[daemon] ${line}`);
  else if (/\bWARNING\b/.test(line)) log.warn(`[daemon] ${line}`);
  else log.info(`[daemon] ${line}`);
}

function controllerOptions(log: CodyLog, diffs: DiffContentProvider): ControllerOptions {
  const settings = readSettings();
  for (const problem of settings.problems) {
    log.warn(problem);
    void vscode.window.showWarningMessage(`Cody: ${problem}`);
  }
  const tracer: Tracer = {
    log: (message: unknown, data?: string) => {
      log.info(data ? `${String(message)}\n${data}` : String(message));
    },
  };
  return {
    client: {
      daemon: settings.daemon,
      clientInfo: { name: "cody-vscode", title: "Cody for VS Code", version: "0.1.0" },
      trace: settings.trace,
      tracer,
      onStderr: (line) => {
        logStderr(log, line);
      },
    },
    cwd: workspaceCwd(),
    sessionMeta: settings.sessionMeta,
    approvals: createApprovalUi(diffs, log),
  };
}

async function pickSession(chat: ChatController): Promise<void> {
  const sessions = await chat.listSessions();
  if (sessions.length === 0) {
    void vscode.window.showInformationMessage("Cody has no stored sessions yet.");
    return;
  }
  interface SessionItem extends vscode.QuickPickItem {
    session: SessionInfo;
  }
  // titles and directories come from session files: one inert line each, `$(x)` not an icon
  const items: SessionItem[] = sessions.map((session) => ({
    label: pickLabel(session.title ?? "(untitled)"),
    description: session.updatedAt ? new Date(session.updatedAt).toLocaleString() : "",
    detail: pickLabel(session.cwd),
    session,
  }));
  const picked = await vscode.window.showQuickPick(items, {
    title: "Open a Cody session",
    placeHolder: "Its history is replayed into the chat",
    matchOnDetail: true,
  });
  if (picked) await chat.openSession(picked.session);
}

async function sendPrompt(chat: ChatController, text?: unknown): Promise<void> {
  let prompt = typeof text === "string" ? text : undefined;
  prompt ??= await vscode.window.showInputBox({ title: "Ask Cody", prompt: "Prompt", placeHolder: "e.g. list files" });
  if (!prompt) return;
  await vscode.commands.executeCommand(`${ChatViewProvider.viewType}.focus`);
  await chat.send(prompt);
}

export function activate(context: vscode.ExtensionContext): void {
  const log = safeLog(vscode.window.createOutputChannel("Cody", { log: true }));
  channel = log;
  const diffs = new DiffContentProvider();
  const chat = new ChatController(controllerOptions(log, diffs));
  controller = chat;

  const onMessage = (message: WebviewMessage): void => {
    switch (message.type) {
      case "prompt":
        void chat.send(message.text);
        break;
      case "queue":
        void chat.queue(message.text);
        break;
      case "addFiles":
        void attachFiles(chat, message.uris.map((uri) => vscode.Uri.parse(uri)));
        break;
      case "cancel":
        void chat.cancel();
        break;
      case "newSession":
        void chat.newSession();
        break;
      case "sessions":
        void pickSession(chat);
        break;
      case "showLog":
        log.show(true);
        break;
      case "dismissErrors":
        chat.dispatch({ type: "clearErrors" });
        break;
      case "ready":
        break;
    }
  };
  const view = new ChatViewProvider(context.extensionUri, chat, onMessage);

  let busy = false;
  let turnStarted = 0;
  let errorCount = 0;
  let daemonStatus = chat.state.daemon.status;
  const onState = (state: ChatState): void => {
    if (state.daemon.status !== daemonStatus) {
      daemonStatus = state.daemon.status;
      if (daemonStatus === "ready") {
        const pid = chat.activeClient?.pid;
        log.info(`Daemon ready: ${state.daemon.agent ?? "cody"}, pid ${pid === undefined ? "?" : String(pid)}, default provider ${state.daemon.defaultProvider ?? "?"}`);
      } else {
        log.info(`Daemon ${daemonStatus}`);
      }
    }
    if (state.busy !== busy) {
      busy = state.busy;
      void vscode.commands.executeCommand("setContext", "cody.busy", busy);
      if (busy) turnStarted = Date.now();
      else if (state.lastStopReason && (!vscode.window.state.focused || Date.now() - turnStarted >= LONG_TURN_MS)) {
        void vscode.window.showInformationMessage(`Cody: turn ended (${state.lastStopReason})`);
      }
    }
    if (state.errors.length > errorCount) {
      for (const error of state.errors.slice(errorCount)) log.error([error.message, ...error.detail].join("\n"));
    }
    errorCount = state.errors.length;
  };

  context.subscriptions.push(
    diffs,
    view,
    chat.onDidChange(onState),
    vscode.workspace.registerTextDocumentContentProvider(DiffContentProvider.scheme, diffs),
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewType, view, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand("cody.newSession", async () => {
      await vscode.commands.executeCommand(`${ChatViewProvider.viewType}.focus`);
      await chat.newSession();
    }),
    vscode.commands.registerCommand("cody.sendPrompt", (text?: unknown) => sendPrompt(chat, text)),
    vscode.commands.registerCommand("cody.cancel", () => chat.cancel()),
    vscode.commands.registerCommand("cody.addFile", (target?: unknown, all?: unknown) => attachFiles(chat, pickedUris(target, all))),
    vscode.commands.registerCommand("cody.sessions", () => pickSession(chat)),
    vscode.commands.registerCommand("cody.showLog", () => {
      log.show(true);
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration("cody")) return;
      log.info("Settings changed: restarting the Cody daemon");
      void chat.restart(controllerOptions(log, diffs));
    }),
  );
  log.info(`Cody activated; workspace ${workspaceCwd()}`);
}

export async function deactivate(): Promise<void> {
  const chat = controller;
  const log = channel;
  controller = undefined;
  channel = undefined;
  try {
    const started = Date.now();
    const exit = await chat?.dispose();
    if (exit) log?.info(`Daemon stopped (${describeExit(exit)}), ${String(Date.now() - started)} ms after deactivate`);
  } finally {
    log?.dispose();
  }
}
