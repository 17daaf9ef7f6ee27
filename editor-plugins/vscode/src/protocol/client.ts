/**
 * A typed client for the Cody daemon over stdio (Content-Length framing, `vscode-jsonrpc`).
 *
 *     const client = await CodyClient.start({ daemon: { command: "cody-daemon", args: [] } });
 *     client.onSessionUpdate((n) => ...);
 *     client.setApprovalHandler(async (request, signal) => ({ outcome: "selected", optionId: "allow_once" }));
 *     const { sessionId } = await client.newSession({ cwd });
 *     const result = await client.prompt(sessionId, "list files");
 *     await client.shutdown();
 *
 * Invariants: no `vscode` import; every failure is a `CodyError`; an approval request is
 * always answered (the handler's choice, an error when it fails, or -32800 once the daemon
 * withdraws it with `$/cancelRequest`, which aborts the handler's signal); a tracer that
 * throws loses its line, never a message (vscode-jsonrpc traces a reply before resolving it).
 */

import {
  Emitter,
  ErrorCodes,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  Trace,
  createMessageConnection,
  type CancellationToken,
  type DataCallback,
  type Disposable,
  type Event,
  type Message,
  type MessageConnection,
  type Tracer,
} from "vscode-jsonrpc/node";

import { CodyError, toCodyError } from "./errors";
import { DaemonProcess, describeExit, type DaemonCommand, type ExitInfo } from "./process";
import {
  ErrorCode,
  Method,
  type ContentBlock,
  type CodySessionMeta,
  type Implementation,
  type InitializeParams,
  type InitializeResult,
  type ListSessionsParams,
  type ListSessionsResult,
  type LoadSessionParams,
  type McpServer,
  type McpStatusNotification,
  type ModelsListResult,
  type NewSessionParams,
  type NewSessionResult,
  type PermissionOutcome,
  type PromptParams,
  type PromptResult,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type SessionIdParams,
  type SessionNotification,
  type SessionStateResult,
  type SetConfigOptionParams,
  type SetConfigOptionResult,
  type SetModeParams,
  type SteerParams,
  type SteerResult,
} from "./types";

export type TraceLevel = "off" | "messages" | "verbose";

/** Sees every JSON-RPC message, in either direction, as it crosses the pipe. */
export type MessageObserver = (direction: "send" | "receive", message: Message) => void;

/**
 * Decides an approval. `signal` aborts when the daemon withdraws the request (the turn was
 * cancelled or the approval timed out): close the UI then; the answer is no longer used.
 */
export type ApprovalHandler = (request: RequestPermissionParams, signal: AbortSignal) => Promise<PermissionOutcome>;

export interface CodyClientOptions {
  daemon: DaemonCommand;
  clientInfo?: Implementation;
  /** Protocol trace (vscode-jsonrpc `Trace`) written to `tracer`. */
  trace?: TraceLevel;
  tracer?: Tracer;
  /** Each line the daemon writes to stderr. */
  onStderr?: (line: string) => void;
  observer?: MessageObserver;
  /** Time from `shutdown()` until the process is killed. Default 5000 ms. */
  shutdownTimeoutMs?: number;
}

export interface NewSessionOptions {
  cwd: string;
  mcpServers?: McpServer[];
  meta?: CodySessionMeta;
}

const DEFAULT_CLIENT_INFO: Implementation = { name: "cody-vscode", title: "Cody for VS Code", version: "0.1.0" };

class ObservedReader extends StreamMessageReader {
  constructor(
    readable: NodeJS.ReadableStream,
    private readonly observer: MessageObserver | undefined,
  ) {
    super(readable);
  }

  override listen(callback: DataCallback): Disposable {
    const observer = this.observer;
    if (!observer) return super.listen(callback);
    return super.listen((message) => {
      observer("receive", message);
      callback(message);
    });
  }
}

class ObservedWriter extends StreamMessageWriter {
  constructor(
    writable: NodeJS.WritableStream,
    private readonly observer: MessageObserver | undefined,
  ) {
    super(writable);
  }

  override write(message: Message): Promise<void> {
    this.observer?.("send", message);
    return super.write(message);
  }
}

function traceValue(level: TraceLevel | undefined): Trace {
  switch (level) {
    case "messages":
      return Trace.Messages;
    case "verbose":
      return Trace.Verbose;
    default:
      return Trace.Off;
  }
}

export class CodyClient {
  readonly initializeResult: InitializeResult;
  private readonly connection: MessageConnection;
  private readonly daemon: DaemonProcess;
  private readonly shutdownTimeoutMs: number;
  private approvalHandler: ApprovalHandler | undefined;
  private closed = false;
  private stopping: Promise<ExitInfo> | undefined;
  private readonly sessionUpdateEmitter = new Emitter<SessionNotification>();
  private readonly mcpStatusEmitter = new Emitter<McpStatusNotification>();
  private readonly exitEmitter = new Emitter<ExitInfo & { expected: boolean }>();

  /** `session/update` notifications (streamed turn events and `session/load` replay). */
  readonly onSessionUpdate: Event<SessionNotification> = this.sessionUpdateEmitter.event;
  /** `_cody/mcp/status` notifications. */
  readonly onMcpStatus: Event<McpStatusNotification> = this.mcpStatusEmitter.event;
  /** The daemon exited; `expected` after `shutdown()`. */
  readonly onExit: Event<ExitInfo & { expected: boolean }> = this.exitEmitter.event;

  private constructor(daemon: DaemonProcess, connection: MessageConnection, initializeResult: InitializeResult, shutdownTimeoutMs: number) {
    this.daemon = daemon;
    this.connection = connection;
    this.initializeResult = initializeResult;
    this.shutdownTimeoutMs = shutdownTimeoutMs;
  }

  /** Spawn the daemon, connect, and `initialize`. */
  static async start(options: CodyClientOptions): Promise<CodyClient> {
    const daemon = await DaemonProcess.spawn(options.daemon, options.onStderr);
    const connection = createMessageConnection(
      new ObservedReader(daemon.child.stdout, options.observer),
      new ObservedWriter(daemon.child.stdin, options.observer),
    );
    // Handlers must exist before `listen()`; they reach the client through this box.
    const box: { client?: CodyClient } = {};
    connection.onNotification(Method.sessionUpdate, (params: SessionNotification) => {
      box.client?.sessionUpdateEmitter.fire(params);
    });
    connection.onNotification(Method.codyMcpStatus, (params: McpStatusNotification) => {
      box.client?.mcpStatusEmitter.fire(params);
    });
    connection.onRequest(Method.sessionRequestPermission, (params: RequestPermissionParams, token: CancellationToken) =>
      box.client ? box.client.answerApproval(params, token) : Promise.resolve(noHandlerError()),
    );
    connection.onClose(() => {
      if (box.client) box.client.closed = true;
    });
    if (options.tracer && options.trace && options.trace !== "off") {
      await connection.trace(traceValue(options.trace), neverThrows(options.tracer));
    }
    connection.listen();

    const params: InitializeParams = {
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: options.clientInfo ?? DEFAULT_CLIENT_INFO,
    };
    let result: InitializeResult;
    try {
      result = await Promise.race([
        connection.sendRequest<InitializeResult>(Method.initialize, params),
        daemon.exited.then((exit): never => {
          throw exitedError(exit, daemon.recentStderr, "before answering initialize");
        }),
      ]);
    } catch (error) {
      connection.dispose();
      daemon.kill("SIGKILL");
      throw toCodyError(error);
    }
    const client = new CodyClient(daemon, connection, result, options.shutdownTimeoutMs ?? 5000);
    box.client = client;
    void daemon.exited.then((exit) => {
      client.closed = true;
      client.exitEmitter.fire({ ...exit, expected: client.stopping !== undefined });
    });
    return client;
  }

  /** The daemon's process id. */
  get pid(): number | undefined {
    return this.daemon.pid;
  }

  /** `false` once the daemon has exited or the connection closed. */
  get running(): boolean {
    return this.isAlive();
  }

  /** Install the approval UI. Without one, approvals are answered with an error (= reject once). */
  setApprovalHandler(handler: ApprovalHandler | undefined): void {
    this.approvalHandler = handler;
  }

  // ------------------------------------------------------------ sessions

  newSession(options: NewSessionOptions): Promise<NewSessionResult> {
    const params: NewSessionParams = { cwd: options.cwd, mcpServers: options.mcpServers ?? [] };
    const meta = compactMeta(options.meta);
    if (meta) params._meta = { cody: meta };
    return this.request<NewSessionResult>(Method.sessionNew, params);
  }

  /** Replays the history as `session/update` notifications, then answers. */
  loadSession(params: { sessionId: string; cwd: string; mcpServers?: McpServer[] }): Promise<SessionStateResult> {
    const full: LoadSessionParams = { ...params, mcpServers: params.mcpServers ?? [] };
    return this.request<SessionStateResult>(Method.sessionLoad, full);
  }

  /** Makes the session live again without replay. */
  resumeSession(params: { sessionId: string; cwd: string; mcpServers?: McpServer[] }): Promise<SessionStateResult> {
    const full: LoadSessionParams = { ...params, mcpServers: params.mcpServers ?? [] };
    return this.request<SessionStateResult>(Method.sessionResume, full);
  }

  listSessions(params: ListSessionsParams = {}): Promise<ListSessionsResult> {
    return this.request<ListSessionsResult>(Method.sessionList, params);
  }

  async closeSession(sessionId: string): Promise<void> {
    const params: SessionIdParams = { sessionId };
    await this.request<unknown>(Method.sessionClose, params);
  }

  setConfigOption(sessionId: string, configId: string, value: string): Promise<SetConfigOptionResult> {
    const params: SetConfigOptionParams = { sessionId, configId, value };
    return this.request<SetConfigOptionResult>(Method.sessionSetConfigOption, params);
  }

  async setMode(sessionId: string, modeId: string): Promise<void> {
    const params: SetModeParams = { sessionId, modeId };
    await this.request<unknown>(Method.sessionSetMode, params);
  }

  listModels(): Promise<ModelsListResult> {
    return this.request<ModelsListResult>(Method.codyModelsList, {});
  }

  // ------------------------------------------------------------ turns

  /**
   * Run one turn; resolves when it ends (updates stream through `onSessionUpdate`).
   * `queue`: while a turn runs, wait for it (and the prompts queued before) instead of
   * failing busy (`_meta.cody.queue`); `session/cancel` answers it `cancelled`.
   */
  prompt(sessionId: string, prompt: string | ContentBlock[], options: { queue?: boolean } = {}): Promise<PromptResult> {
    const blocks: ContentBlock[] = typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt;
    const params: PromptParams = { sessionId, prompt: blocks };
    if (options.queue) params._meta = { cody: { queue: true } };
    return this.request<PromptResult>(Method.sessionPrompt, params);
  }

  /**
   * Add a message to the running turn (`_cody/session/steer`): the model reads it at its
   * next step. Rejects with a `busy` CodyError (-32011) when no turn runs.
   */
  async steer(sessionId: string, prompt: string | ContentBlock[]): Promise<string> {
    const blocks: ContentBlock[] = typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt;
    const params: SteerParams = { sessionId, prompt: blocks };
    const result = await this.request<SteerResult>(Method.codySessionSteer, params);
    return result.turnId;
  }

  /** Stop the running turn (`session/cancel`); the prompt then answers `cancelled`. */
  async cancel(sessionId: string): Promise<void> {
    if (!this.running) return;
    const params: SessionIdParams = { sessionId };
    await this.connection.sendNotification(Method.sessionCancel, params);
  }

  // ------------------------------------------------------------ lifecycle

  /**
   * `shutdown` then `exit`; the process is killed if it has not exited after
   * `shutdownTimeoutMs` (SIGTERM, then SIGKILL a second later). Safe to call twice.
   */
  shutdown(): Promise<ExitInfo> {
    this.stopping ??= this.stop();
    return this.stopping;
  }

  private async stop(): Promise<ExitInfo> {
    const term = setTimeout(() => {
      this.daemon.kill("SIGTERM");
    }, this.shutdownTimeoutMs);
    const kill = setTimeout(() => {
      this.daemon.kill("SIGKILL");
    }, this.shutdownTimeoutMs + 1000);
    try {
      if (this.isAlive()) {
        await Promise.race([this.connection.sendRequest<null>(Method.shutdown), this.daemon.exited]);
        if (this.isAlive()) await this.connection.sendNotification(Method.exit);
      }
    } catch {
      // the daemon is going away either way; the timers make sure it does
    }
    if (this.daemon.exit === undefined) this.daemon.child.stdin.end();
    const exit = await this.daemon.exited;
    clearTimeout(term);
    clearTimeout(kill);
    this.connection.dispose();
    return exit;
  }

  // ------------------------------------------------------------ internals

  private async request<R>(method: string, params: object): Promise<R> {
    if (!this.isAlive()) throw this.stoppedError();
    try {
      return await this.connection.sendRequest<R>(method, params);
    } catch (error) {
      if (error instanceof ResponseError && error.code !== ErrorCodes.PendingResponseRejected && error.code !== ErrorCodes.ConnectionInactive) {
        throw toCodyError(error);
      }
      if (!this.isAlive()) {
        // the pipe closes just before the exit is reported: give the exit code a moment
        await Promise.race([this.daemon.exited, new Promise((resolve) => setTimeout(resolve, 500))]);
        throw this.stoppedError();
      }
      throw toCodyError(error);
    }
  }

  private isAlive(): boolean {
    return !this.closed && this.daemon.exit === undefined;
  }

  private stoppedError(): CodyError {
    const exit = this.daemon.exit;
    if (exit) return exitedError(exit, this.daemon.recentStderr, "");
    return new CodyError("daemon", "The connection to the Cody daemon is closed.");
  }

  private async answerApproval(
    params: RequestPermissionParams,
    token: CancellationToken,
  ): Promise<RequestPermissionResult | ResponseError<null>> {
    const handler = this.approvalHandler;
    if (!handler) return noHandlerError();
    const controller = new AbortController();
    const withdrawn = new Promise<ResponseError<null>>((resolve) => {
      const onCancel = (): void => {
        controller.abort();
        resolve(new ResponseError<null>(ErrorCode.RequestCancelled, "approval withdrawn by the daemon"));
      };
      if (token.isCancellationRequested) onCancel();
      else token.onCancellationRequested(onCancel);
    });
    const decided = handler(params, controller.signal).then(
      (outcome): RequestPermissionResult => ({ outcome }),
      (error: unknown) => new ResponseError<null>(ErrorCodes.InternalError, `approval failed: ${toCodyError(error).message}`),
    );
    return Promise.race([decided, withdrawn]);
  }
}

/** A tracer whose failures are swallowed: an exception there would drop the reply being traced. */
function neverThrows(tracer: Tracer): Tracer {
  return {
    log: (dataObject: unknown, data?: string): void => {
      try {
        if (typeof dataObject === "string") tracer.log(dataObject, data);
        else tracer.log(dataObject);
      } catch {
        // a trace line is not worth a lost message
      }
    },
  };
}

function noHandlerError(): ResponseError<null> {
  return new ResponseError<null>(ErrorCodes.InternalError, "this client has no approval handler");
}

function exitedError(exit: ExitInfo, stderr: string[], when: string): CodyError {
  const suffix = when ? ` ${when}` : "";
  const detail = stderr.length > 0 ? ["Last lines of its stderr:", ...stderr.slice(-8)] : [];
  return new CodyError("daemon", `The Cody daemon exited (${describeExit(exit)})${suffix}.`, { detail });
}

/** `_meta.cody` without empty values, or undefined when nothing is set. */
function compactMeta(meta: CodySessionMeta | undefined): CodySessionMeta | undefined {
  if (!meta) return undefined;
  const entries = Object.entries(meta).filter(([, value]) => value !== undefined && value !== null && value !== "");
  if (entries.length === 0) return undefined;
  const compact: CodySessionMeta = Object.fromEntries(entries);
  return compact;
}
