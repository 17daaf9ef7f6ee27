/**
 * The chat's behaviour, without any editor UI: owns one daemon client and one current
 * session, turns protocol traffic into reducer events, and exposes what the commands do
 * (new session, send, cancel, list/open sessions, restart).
 *
 * While a turn runs, `send` steers it (`_cody/session/steer`: the model reads the message
 * at its next step; if the turn ended meanwhile, -32011, the message is queued instead) and
 * `queue` sends a prompt that waits for it (`_meta.cody.queue`); queued prompts are shown as
 * turns of their own, in order, and a cancelled turn drops them. Files attached with
 * `attach` go with the next message as embedded resources.
 *
 * Invariants: no `vscode` import (the approval UI is injected); every failure ends up in
 * `state` as a readable error and never escapes as a rejected promise; the daemon is
 * started on demand, so one that exited is started again by the next action, never in a loop.
 */

import { Emitter, type Event } from "vscode-jsonrpc/node";

import { CodyClient, type CodyClientOptions } from "../protocol/client";
import { CodyError, toCodyError } from "../protocol/errors";
import type { ExitInfo } from "../protocol/process";
import type { CodySessionMeta, ContentBlock, PermissionOutcome, PromptResult, RequestPermissionParams, SessionConfigOption, SessionInfo } from "../protocol/types";
import { initialState, reduce, type ApprovalDecision, type ChatEvent, type ChatState, type ErrorInfo } from "./state";

/** Shows an approval to the user; `signal` aborts when the daemon withdraws it. */
export type ApprovalUi = (request: RequestPermissionParams, signal: AbortSignal) => Promise<PermissionOutcome>;

export interface ControllerOptions {
  client: CodyClientOptions;
  /** The directory new sessions start in (the workspace folder). */
  cwd: string;
  /** `_meta.cody` for `session/new` (provider, model, approval policy, sandbox). */
  sessionMeta: CodySessionMeta;
  approvals: ApprovalUi;
}

/** A file (or part of one) to send with the next message. */
export interface Attachment {
  /** What the chat shows: a workspace-relative path, `a.ts:3-9` for a selection. */
  name: string;
  /** `file:///...` (with `#L3-L9` for a selection). */
  uri: string;
  text: string;
}

interface QueuedPrompt {
  text: string;
  result: Promise<PromptResult>;
}

export function errorInfo(error: unknown): ErrorInfo {
  const cody = toCodyError(error);
  const info: ErrorInfo = { kind: cody.kind, message: cody.message, detail: cody.detail };
  if (cody.code !== undefined) info.code = cody.code;
  return info;
}

export class ChatController {
  private options: ControllerOptions;
  private current: ChatState = initialState();
  private client: CodyClient | undefined;
  private starting: Promise<CodyClient> | undefined;
  /** The client in which the current session is live. */
  private liveIn: CodyClient | undefined;
  private queued: QueuedPrompt[] = [];
  private attachments: ContentBlock[] = [];
  private readonly changed = new Emitter<ChatState>();

  /** Fires after every state change. */
  readonly onDidChange: Event<ChatState> = this.changed.event;

  constructor(options: ControllerOptions) {
    this.options = options;
  }

  get state(): ChatState {
    return this.current;
  }

  /** The running client, if any (for the log and tests). */
  get activeClient(): CodyClient | undefined {
    return this.client?.running ? this.client : undefined;
  }

  dispatch(event: ChatEvent): void {
    this.current = reduce(this.current, event);
    this.changed.fire(this.current);
  }

  /** Start the daemon if it is not running. Returns undefined (and records the error) on failure. */
  async start(): Promise<CodyClient | undefined> {
    try {
      return await this.ensureClient();
    } catch (error) {
      this.dispatch({ type: "error", error: errorInfo(error) });
      return undefined;
    }
  }

  /** Start a new session in the workspace. Returns its id. */
  async newSession(): Promise<string | undefined> {
    try {
      const client = await this.ensureClient();
      const result = await client.newSession({ cwd: this.options.cwd, meta: this.options.sessionMeta });
      this.liveIn = client;
      this.dispatch({ type: "sessionOpened", sessionId: result.sessionId, cwd: this.options.cwd, result });
      return result.sessionId;
    } catch (error) {
      this.dispatch({ type: "error", error: errorInfo(error) });
      return undefined;
    }
  }

  /** Files for the next message (embedded resources; the chat lists them until then). */
  attach(attachment: Attachment): void {
    this.attachments.push({ type: "resource", resource: { uri: attachment.uri, text: attachment.text } });
    this.dispatch({ type: "attached", name: attachment.name });
  }

  /** The blocks of a message: its text, then the files attached since the last one. */
  private content(text: string): ContentBlock[] {
    const blocks: ContentBlock[] = [{ type: "text", text }, ...this.attachments];
    if (this.attachments.length > 0) {
      this.attachments = [];
      this.dispatch({ type: "attachmentsSent" });
    }
    return blocks;
  }

  /**
   * Run one turn in the current session (a new one if there is none); while a turn runs,
   * steer it instead. Resolves with the turn's answer (undefined for a steer or a failure).
   */
  async send(text: string): Promise<PromptResult | undefined> {
    const prompt = text.trim();
    if (!prompt) return undefined;
    if (this.current.busy) {
      await this.steer(prompt);
      return undefined;
    }
    const session = this.current.session;
    let sessionId: string | undefined;
    if (!session) sessionId = await this.newSession();
    else if (this.client?.running && this.liveIn === this.client) sessionId = session.id;
    else sessionId = await this.resume(session.id, session.cwd); // a new daemon: make the session live again
    const client = this.client;
    if (!sessionId || !client) return undefined;
    this.dispatch({ type: "promptStarted", text: prompt });
    const result = await this.finish(client.prompt(sessionId, this.content(prompt)));
    void this.nextQueued(result);
    return result;
  }

  /** Add a message to the running turn; a turn that just ended gets it queued instead. */
  async steer(text: string): Promise<void> {
    const sessionId = this.current.session?.id;
    const client = this.client;
    if (!sessionId || !client?.running) return;
    const blocks = this.content(text);
    try {
      await client.steer(sessionId, blocks);
      this.dispatch({ type: "notice", text: "Sent to the running turn: the model reads it next." });
    } catch (error) {
      const info = errorInfo(error);
      if (info.code === -32011) this.enqueue(client, sessionId, text, blocks);
      else this.dispatch({ type: "error", error: info });
    }
  }

  /** Queue a prompt to run after the running turn (with none running: send it now). */
  async queue(text: string): Promise<void> {
    const prompt = text.trim();
    if (!prompt) return;
    const sessionId = this.current.session?.id;
    const client = this.client;
    if (!this.current.busy || !sessionId || !client?.running) {
      await this.send(prompt);
      return;
    }
    this.enqueue(client, sessionId, prompt, this.content(prompt));
  }

  private enqueue(client: CodyClient, sessionId: string, text: string, blocks: ContentBlock[]): void {
    const result = client.prompt(sessionId, blocks, { queue: true });
    result.catch(() => undefined); // reported when its turn comes (nextQueued)
    this.queued.push({ text, result });
    this.dispatch({ type: "promptQueued", text });
  }

  /** The turn's answer into the state (undefined: it failed, said in the chat). */
  private async finish(answer: Promise<PromptResult>): Promise<PromptResult | undefined> {
    try {
      const result = await answer;
      this.dispatch({ type: "promptFinished", result });
      return result;
    } catch (error) {
      this.dispatch({ type: "promptFailed", error: errorInfo(error) });
      return undefined;
    }
  }

  /** After a turn: its queued prompts run in order, or are dropped when it was cancelled. */
  private async nextQueued(previous: PromptResult | undefined): Promise<void> {
    let last = previous;
    while (this.queued.length > 0) {
      const next = this.queued.shift();
      if (!next) break;
      if (last?.stopReason === "cancelled") {
        this.dispatch({ type: "queuedDropped", text: next.text });
        continue;
      }
      this.dispatch({ type: "queuedStarted", text: next.text });
      last = await this.finish(next.result);
    }
  }

  /** Cancel the running turn (a pending approval is withdrawn by the daemon). */
  async cancel(): Promise<void> {
    const sessionId = this.current.session?.id;
    if (!sessionId || !this.client?.running || !this.current.busy) return;
    try {
      await this.client.cancel(sessionId);
    } catch (error) {
      this.dispatch({ type: "error", error: errorInfo(error) });
    }
  }

  /** Sessions, newest first. */
  async listSessions(): Promise<SessionInfo[]> {
    try {
      const client = await this.ensureClient();
      const sessions: SessionInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listSessions(cursor ? { cursor } : {});
        sessions.push(...page.sessions);
        cursor = page.nextCursor ?? undefined;
      } while (cursor && sessions.length < 1000);
      return sessions;
    } catch (error) {
      this.dispatch({ type: "error", error: errorInfo(error) });
      return [];
    }
  }

  /** Open a stored session: its history is replayed into the chat. */
  async openSession(session: SessionInfo): Promise<boolean> {
    if (this.current.busy) {
      this.dispatch({ type: "error", error: { kind: "busy", message: "Cancel the running turn before opening another session.", detail: [] } });
      return false;
    }
    try {
      const client = await this.ensureClient();
      const previous = this.current.session;
      this.dispatch({ type: "sessionLoading", sessionId: session.sessionId, cwd: session.cwd, title: session.title ?? null });
      if (previous && previous.id !== session.sessionId) {
        client.closeSession(previous.id).catch(() => undefined);
      }
      const result = await client.loadSession({ sessionId: session.sessionId, cwd: session.cwd });
      this.liveIn = client;
      this.dispatch({ type: "sessionOpened", sessionId: session.sessionId, cwd: session.cwd, result });
      return true;
    } catch (error) {
      this.dispatch({ type: "error", error: errorInfo(error) });
      return false;
    }
  }

  /** Stop the daemon, take new options, and start again (settings changed). */
  async restart(options?: ControllerOptions): Promise<void> {
    if (options) this.options = options;
    const wasRunning = this.client?.running ?? false;
    await this.stop();
    if (wasRunning) await this.start();
  }

  /** Stop the daemon (`shutdown`, `exit`, kill after the timeout). Resolves to how it exited, if it ran. */
  async stop(): Promise<ExitInfo | undefined> {
    const client = this.client ?? (await this.starting?.catch(() => undefined));
    this.client = undefined;
    this.starting = undefined;
    return client ? await client.shutdown() : undefined;
  }

  async dispose(): Promise<ExitInfo | undefined> {
    const exit = await this.stop();
    this.changed.dispose();
    return exit;
  }

  private async resume(sessionId: string, cwd: string): Promise<string | undefined> {
    try {
      const client = await this.ensureClient();
      const result = await client.resumeSession({ sessionId, cwd });
      this.liveIn = client;
      this.dispatch({ type: "sessionOpened", sessionId, cwd, result });
      await this.applySettings(client, sessionId, result.configOptions);
      return sessionId;
    } catch (error) {
      this.dispatch({ type: "error", error: errorInfo(error) });
      return undefined;
    }
  }

  /** Settings changed while the daemon was down: carry them over to the resumed session. */
  private async applySettings(client: CodyClient, sessionId: string, options: SessionConfigOption[]): Promise<void> {
    const meta = this.options.sessionMeta;
    const wanted: [string, string | null | undefined][] = [
      ["provider", meta.provider],
      ["model", meta.model],
      ["approval_policy", meta.approvalPolicy],
      ["sandbox_mode", meta.sandboxMode],
    ];
    let current = options;
    for (const [configId, value] of wanted) {
      if (!value || current.find((option) => option.id === configId)?.currentValue === value) continue;
      current = (await client.setConfigOption(sessionId, configId, value)).configOptions;
      this.dispatch({ type: "sessionUpdate", notification: { sessionId, update: { sessionUpdate: "config_option_update", configOptions: current } } });
    }
  }

  private ensureClient(): Promise<CodyClient> {
    if (this.client?.running) return Promise.resolve(this.client);
    this.starting ??= this.spawn().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async spawn(): Promise<CodyClient> {
    this.dispatch({ type: "daemonStarting" });
    let client: CodyClient;
    try {
      client = await CodyClient.start(this.options.client);
    } catch (error) {
      this.dispatch({ type: "daemonExited", code: null, signal: null, expected: true });
      throw error instanceof CodyError ? error : toCodyError(error);
    }
    this.client = client;
    client.setApprovalHandler((request, signal) => this.approve(request, signal));
    client.onSessionUpdate((notification) => {
      this.dispatch({ type: "sessionUpdate", notification });
    });
    client.onMcpStatus((status) => {
      this.dispatch({ type: "mcpStatus", status });
    });
    client.onExit((exit) => {
      if (this.client === client) this.client = undefined;
      this.dispatch({ type: "daemonExited", code: exit.code, signal: exit.signal, expected: exit.expected });
    });
    this.dispatch({ type: "daemonReady", initialize: client.initializeResult });
    return client;
  }

  private async approve(request: RequestPermissionParams, signal: AbortSignal): Promise<PermissionOutcome> {
    const toolCallId = request.toolCall.toolCallId;
    let settled = false;
    const settle = (decision: ApprovalDecision, optionId?: string): void => {
      if (settled) return;
      settled = true;
      this.dispatch(optionId ? { type: "approvalResolved", toolCallId, decision, optionId } : { type: "approvalResolved", toolCallId, decision });
    };
    const onAbort = (): void => {
      settle("withdrawn");
    };
    this.dispatch({ type: "approvalRequested", request });
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const outcome = await this.options.approvals(request, signal);
      if (outcome.outcome === "selected") settle("selected", outcome.optionId);
      else settle("cancelled");
      return outcome;
    } catch (error) {
      settle("failed");
      throw error;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }
}
