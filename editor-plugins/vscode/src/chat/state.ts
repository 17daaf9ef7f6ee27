/**
 * The chat view's state and its pure reducer: `reduce(state, event) => state`.
 *
 * Invariants: no I/O and no `vscode` import; the input state is never mutated; a tool call
 * appears once in `items` however many updates it gets; updates for another session are
 * ignored, except a child session's (a subagent's: `_meta.cody.parentSessionId` is the shown
 * session), which show under the parent's `task` call; `busy` is false once a prompt has answered or failed, or the daemon has exited.
 */

import type {
  Cost,
  InitializeResult,
  Json,
  McpStatusNotification,
  PermissionOption,
  PlanEntry,
  PromptResult,
  RequestPermissionParams,
  SessionConfigOption,
  SessionNotification,
  SessionStateResult,
  StopReason,
  TokenUsage,
  ToolCallStatus,
  ToolKind,
  TurnCost,
} from "../protocol/types";
import { applyChildUpdate, applyUpdate, closeOpenCalls, mapCall, optionValue, pendingApproval } from "./updates";

/** An error as plain data (what `CodyError` carries). */
export interface ErrorInfo {
  kind: string;
  message: string;
  detail: string[];
  code?: number;
}

export interface DiffPreview {
  path: string;
  oldText: string | null;
  newText: string;
}

export interface ToolCallView {
  id: string;
  title: string;
  kind: ToolKind;
  status: ToolCallStatus;
  rawInput?: Json;
  /** The head of the call's output (its text content), cut to `PREVIEW_LINES` lines. */
  preview: string;
  /** Lines of output left out of `preview`. */
  hiddenLines: number;
  diffs: DiffPreview[];
  /** How its approval was decided, when one was asked. */
  decision?: string;
  /** The child session (a subagent) this `task` call started, and what it did. */
  subagent?: SubagentView;
}

export interface SubagentView {
  sessionId: string;
  agent: string;
  background: boolean;
  /** One line per tool call the child made ("▸ List .", "✗ Run make"), oldest first. */
  activity: string[];
}

export type ChatItem =
  | { type: "user"; turn: number; text: string; messageId?: string }
  | { type: "agent"; turn: number; text: string }
  | { type: "thought"; turn: number; text: string }
  | { type: "tool"; turn: number; call: ToolCallView }
  | { type: "notice"; turn: number; text: string }
  | { type: "error"; turn: number; error: ErrorInfo };

export interface PendingApproval {
  requestId: string;
  sessionId: string;
  toolCallId: string;
  title: string;
  kind: ToolKind;
  /** The command and cwd (text content of the request), when there is one. */
  text: string;
  diffs: DiffPreview[];
  options: PermissionOption[];
  /** `false` when the command would run without a sandbox. */
  sandboxed: boolean | null;
}

export interface SessionView {
  id: string;
  cwd: string;
  title: string | null;
  provider: string | null;
  model: string | null;
  modeId: string | null;
  configOptions: SessionConfigOption[];
  warnings: string[];
}

export interface UsageView {
  /** Tokens of the last turn and of the whole session (`_meta.cody.usage`). */
  turn: TokenUsage | null;
  total: TokenUsage | null;
  /** Context use after the last model call (`usage_update`). */
  contextUsed: number | null;
  contextSize: number | null;
  /** Session cost, when the model has a known price. */
  cost: Cost | null;
}

export interface McpServerView {
  sessionId: string;
  state: McpStatusNotification["state"];
  tools: number;
  reason: string | null;
}

export type DaemonStatus = "stopped" | "starting" | "ready" | "exited";

export interface ChatState {
  daemon: { status: DaemonStatus; agent: string | null; defaultProvider: string | null };
  session: SessionView | null;
  /** True while `session/load` replays the history. */
  loading: boolean;
  items: ChatItem[];
  turn: number;
  busy: boolean;
  pendingApproval: PendingApproval | null;
  usage: UsageView;
  lastStopReason: StopReason | null;
  plan: PlanEntry[];
  /** MCP servers of the current session, by name (`_cody/mcp/status`). */
  mcp: Record<string, McpServerView>;
  /** The most recent errors, oldest first (at most `MAX_ERRORS`). */
  errors: ErrorInfo[];
  /** Prompts queued behind the running turn (`_meta.cody.queue`), oldest first. */
  queued: string[];
  /** Files to send with the next message ("Add File to Cody Chat", drag and drop). */
  attachments: string[];
}

export type ApprovalDecision = "selected" | "cancelled" | "withdrawn" | "failed";

export type ChatEvent =
  | { type: "daemonStarting" }
  | { type: "daemonReady"; initialize: InitializeResult }
  | { type: "daemonExited"; code: number | null; signal: string | null; expected: boolean }
  /** Before `session/load`: the replayed updates that follow belong to this session. */
  | { type: "sessionLoading"; sessionId: string; cwd: string; title: string | null }
  | { type: "sessionOpened"; sessionId: string; cwd: string; result: SessionStateResult }
  | { type: "sessionUpdate"; notification: SessionNotification }
  | { type: "promptStarted"; text: string }
  | { type: "promptFinished"; result: PromptResult }
  | { type: "promptFailed"; error: ErrorInfo }
  | { type: "approvalRequested"; request: RequestPermissionParams }
  | { type: "approvalResolved"; toolCallId: string; decision: ApprovalDecision; optionId?: string }
  | { type: "mcpStatus"; status: McpStatusNotification }
  | { type: "error"; error: ErrorInfo }
  | { type: "clearErrors" }
  /** A line of the client's own in the transcript ("Sent to the running turn."). */
  | { type: "notice"; text: string }
  /** A prompt queued behind the running turn (it runs, in order, after it). */
  | { type: "promptQueued"; text: string }
  /** The oldest queued prompt starts (its turn's updates follow), or was dropped. */
  | { type: "queuedStarted"; text: string }
  | { type: "queuedDropped"; text: string }
  | { type: "attached"; name: string }
  | { type: "attachmentsSent" };

export { PREVIEW_CHARS, PREVIEW_LINES, previewOf } from "./updates";
export const MAX_ERRORS = 20;

export function initialState(): ChatState {
  return {
    daemon: { status: "stopped", agent: null, defaultProvider: null },
    session: null,
    loading: false,
    items: [],
    turn: 0,
    busy: false,
    pendingApproval: null,
    usage: emptyUsage(),
    lastStopReason: null,
    plan: [],
    mcp: {},
    errors: [],
    queued: [],
    attachments: [],
  };
}

function emptyUsage(): UsageView {
  return { turn: null, total: null, contextUsed: null, contextSize: null, cost: null };
}

export function reduce(state: ChatState, event: ChatEvent): ChatState {
  switch (event.type) {
    case "daemonStarting":
      return { ...state, daemon: { ...state.daemon, status: "starting" } };
    case "daemonReady": {
      const info = event.initialize.agentInfo;
      return {
        ...state,
        daemon: {
          status: "ready",
          agent: `${info.title ?? info.name} ${info.version}`,
          defaultProvider: event.initialize._meta.cody.defaultProvider,
        },
      };
    }
    case "daemonExited":
      return daemonExited(state, event);
    case "sessionLoading":
      return {
        ...state,
        ...freshSession(),
        mcp: mcpOf(state.mcp, event.sessionId),
        loading: true,
        session: sessionView(event.sessionId, event.cwd, event.title, null),
      };
    case "sessionOpened": {
      const keep = state.session?.id === event.sessionId;
      const base = keep ? state : { ...state, ...freshSession(), mcp: mcpOf(state.mcp, event.sessionId) };
      const title = keep ? (state.session?.title ?? null) : null;
      return { ...base, loading: false, session: sessionView(event.sessionId, event.cwd, title, event.result) };
    }
    case "sessionUpdate":
      if (state.session?.id !== event.notification.sessionId) {
        // A child session (a subagent) of the shown one: its activity under the parent's call.
        const parent = event.notification._meta?.cody;
        if (!state.session || parent?.parentSessionId !== state.session.id) return state;
        return applyChildUpdate(state, parent, event.notification);
      }
      return applyUpdate(state, event.notification.update);
    case "promptStarted": {
      const turn = state.turn + 1;
      return {
        ...state,
        turn,
        busy: true,
        lastStopReason: null,
        items: [...state.items, { type: "user", turn, text: event.text }],
      };
    }
    case "promptFinished":
      return promptFinished(state, event.result);
    case "promptFailed":
      return {
        ...withError(state, event.error),
        busy: false,
        pendingApproval: null,
        items: closeOpenCalls([...state.items, { type: "error", turn: state.turn, error: event.error }], "failed"),
      };
    case "approvalRequested":
      if (
        state.session !== null &&
        state.session.id !== event.request.sessionId &&
        event.request._meta?.cody.parentSessionId !== state.session.id
      )
        return state;
      return { ...state, pendingApproval: pendingApproval(event.request) };
    case "approvalResolved": {
      const pending = state.pendingApproval?.toolCallId === event.toolCallId ? null : state.pendingApproval;
      const decision = event.decision === "selected" ? (event.optionId ?? "selected") : event.decision;
      return {
        ...state,
        pendingApproval: pending,
        items: mapCall(state.items, event.toolCallId, (call) => ({ ...call, decision })),
      };
    }
    case "mcpStatus": {
      // may arrive before `session/new` answers, so it is kept and filtered when the session opens
      const { server, sessionId, state: serverState, tools, reason } = event.status;
      const entry: McpServerView = { sessionId, state: serverState, tools: tools ?? 0, reason: reason ?? null };
      return { ...state, mcp: { ...state.mcp, [server]: entry } };
    }
    case "error":
      return withError(state, event.error);
    case "clearErrors":
      return { ...state, errors: [] };
    case "notice":
      return { ...state, items: [...state.items, { type: "notice", turn: state.turn, text: event.text }] };
    case "promptQueued":
      return {
        ...state,
        queued: [...state.queued, event.text],
        items: [...state.items, { type: "notice", turn: state.turn, text: `Queued: ${event.text}` }],
      };
    case "queuedStarted": {
      const started = reduce({ ...state, queued: withoutFirst(state.queued, event.text) }, { type: "promptStarted", text: event.text });
      return started;
    }
    case "queuedDropped":
      return {
        ...state,
        queued: withoutFirst(state.queued, event.text),
        items: [...state.items, { type: "notice", turn: state.turn, text: `Dropped the queued prompt: ${event.text}` }],
      };
    case "attached":
      return { ...state, attachments: [...state.attachments, event.name] };
    case "attachmentsSent":
      return { ...state, attachments: [] };
  }
}

function withoutFirst(list: string[], item: string): string[] {
  const index = list.indexOf(item);
  return index < 0 ? list : [...list.slice(0, index), ...list.slice(index + 1)];
}

function mcpOf(mcp: ChatState["mcp"], sessionId: string): ChatState["mcp"] {
  return Object.fromEntries(Object.entries(mcp).filter(([, entry]) => entry.sessionId === sessionId));
}

function freshSession(): Pick<ChatState, "items" | "turn" | "busy" | "pendingApproval" | "usage" | "lastStopReason" | "plan"> {
  return {
    items: [],
    turn: 0,
    busy: false,
    pendingApproval: null,
    usage: emptyUsage(),
    lastStopReason: null,
    plan: [],
  };
}

function sessionView(id: string, cwd: string, title: string | null, result: SessionStateResult | null): SessionView {
  const options = result?.configOptions ?? [];
  const meta = result?._meta?.cody;
  return {
    id,
    cwd,
    title,
    provider: meta?.provider ?? optionValue(options, "provider"),
    model: meta?.model ?? optionValue(options, "model"),
    modeId: result?.modes.currentModeId ?? null,
    configOptions: options,
    warnings: meta?.warnings ?? [],
  };
}

function withError(state: ChatState, error: ErrorInfo): ChatState {
  return { ...state, errors: [...state.errors, error].slice(-MAX_ERRORS) };
}

function daemonExited(state: ChatState, event: Extract<ChatEvent, { type: "daemonExited" }>): ChatState {
  const next: ChatState = {
    ...state,
    daemon: { ...state.daemon, status: "exited" },
    busy: false,
    loading: false,
    pendingApproval: null,
    items: closeOpenCalls(state.items, "failed"),
  };
  if (event.expected) return next;
  const how = event.signal ? `signal ${event.signal}` : `exit code ${String(event.code)}`;
  const error: ErrorInfo = {
    kind: "daemon",
    message: `The Cody daemon stopped unexpectedly (${how}).`,
    detail: ["It starts again with the next prompt; the log (Cody: Show Log) has its stderr."],
  };
  return { ...withError(next, error), items: [...next.items, { type: "error", turn: state.turn, error }] };
}

function promptFinished(state: ChatState, result: PromptResult): ChatState {
  const meta = result._meta?.cody;
  const usage: UsageView = {
    ...state.usage,
    turn: meta?.usage.turn ?? state.usage.turn,
    total: meta?.usage.total ?? state.usage.total,
    cost: meta?.cost ? turnCostTotal(meta.cost) : state.usage.cost,
  };
  const notice = stopNotice(result.stopReason);
  const items = closeOpenCalls(state.items, "failed");
  return {
    ...state,
    busy: false,
    pendingApproval: null,
    usage,
    lastStopReason: result.stopReason,
    items: notice ? [...items, { type: "notice", turn: state.turn, text: notice }] : items,
  };
}

function turnCostTotal(cost: TurnCost): Cost {
  return { amount: cost.total, currency: cost.currency ?? "USD" };
}

export function stopNotice(reason: StopReason): string | null {
  switch (reason) {
    case "end_turn":
      return null;
    case "cancelled":
      return "Turn cancelled.";
    case "max_turn_requests":
      return "Stopped: the turn reached the maximum number of model calls (max_tool_iterations).";
    case "max_tokens":
      return "Stopped: the model reached its output limit.";
    case "refusal":
      return "The model refused to continue.";
  }
}
