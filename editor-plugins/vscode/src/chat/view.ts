/**
 * `ChatState` → `ChatViewModel`: the strings the webview shows, computed here so that the
 * webview script only lays them out (and so that they are tested in Node).
 *
 * Invariants: pure, no `vscode` import. Every string of the view model is inert (`inertDeep`,
 * src/inert.ts: no control or bidi character reaches the webview) and a title, label or chip
 * is one line (`oneLine`).
 */

import { inertDeep, oneLine } from "../inert";
import type { TokenUsage } from "../protocol/types";
import type { ChatState, DiffPreview, ErrorInfo, ToolCallView } from "./state";
import type { ChatViewModel, ViewItem, ViewToolCall, WebviewMessage } from "./view-model";

const STATUS_LABEL: Record<ToolCallView["status"], string> = {
  pending: "pending",
  in_progress: "running",
  completed: "done",
  failed: "failed",
};

const DECISION_LABEL: Record<string, string> = {
  allow_once: "allowed once",
  allow_always: "allowed for this session",
  allow_session: "allowed for this session", // the id daemons before allow_always sent
  reject_once: "rejected",
  reject_always: "rejected for this session",
  reject_session: "rejected for this session",
  cancelled: "turn stopped at the approval",
  withdrawn: "approval withdrawn",
  failed: "approval failed",
};

const number = new Intl.NumberFormat("en-US");

export function toViewModel(state: ChatState): ChatViewModel {
  return inertDeep(buildViewModel(state));
}

function buildViewModel(state: ChatState): ChatViewModel {
  const shownErrors = new Set<ErrorInfo>();
  const items: ViewItem[] = [];
  for (const item of state.items) {
    switch (item.type) {
      case "tool":
        items.push({ type: "tool", call: toolView(item.call) });
        break;
      case "error":
        shownErrors.add(item.error);
        items.push({ type: "error", message: item.error.message, detail: item.error.detail.join("\n") });
        break;
      default:
        items.push({ type: item.type, text: item.text });
    }
  }
  const approval = state.pendingApproval;
  return {
    title: oneLine(state.session?.title ?? (state.session ? "New session" : "Cody")),
    daemon: daemonLabel(state),
    status: statusChips(state).map(oneLine),
    busy: state.busy,
    loading: state.loading,
    items,
    approval: approval ? { title: `Waiting for your approval: ${oneLine(approval.title)}`, text: approval.text || approval.diffs.map((d) => oneLine(d.path)).join("\n") } : null,
    errors: state.errors.filter((error) => !shownErrors.has(error)).map((error) => ({ message: error.message, detail: error.detail.join("\n") })),
    plan: state.plan.map((entry) => ({ content: oneLine(entry.content), status: oneLine(entry.status) })),
    mcp: Object.entries(state.mcp).map(([rawName, server]) => {
      const name = oneLine(rawName);
      if (server.state === "ready") return `${name}: ready (${String(server.tools)} tools)`;
      if (server.state === "failed") return `${name}: failed${server.reason ? ` (${oneLine(server.reason)})` : ""}`;
      return `${name}: starting`;
    }),
    attachments: state.attachments.map(oneLine),
    queued: state.queued.length,
  };
}

function daemonLabel(state: ChatState): string {
  switch (state.daemon.status) {
    case "ready":
      return `${state.daemon.agent ?? "Cody"} · ready`;
    case "starting":
      return "starting the daemon…";
    case "exited":
      return "daemon stopped (starts with the next prompt)";
    case "stopped":
      return "not started";
  }
}

function statusChips(state: ChatState): string[] {
  const chips: string[] = [];
  const session = state.session;
  if (session?.provider || session?.model) chips.push([session.provider, session.model].filter(Boolean).join(" · "));
  else if (state.daemon.defaultProvider) chips.push(`${state.daemon.defaultProvider} (default)`);
  if (session?.modeId) chips.push(`mode ${session.modeId}`);
  const total = state.usage.total;
  if (total) chips.push(tokenLabel(total, state.usage.turn));
  const { contextUsed, contextSize } = state.usage;
  if (contextUsed !== null && contextSize) {
    const percent = Math.round((contextUsed / contextSize) * 100);
    chips.push(`context ${number.format(contextUsed)}/${number.format(contextSize)} (${String(percent)}%)`);
  }
  const cost = state.usage.cost;
  if (cost) chips.push(cost.currency === "USD" ? `$${cost.amount.toFixed(4)}` : `${cost.amount.toFixed(4)} ${cost.currency}`);
  if (state.queued.length > 0) chips.push(`${String(state.queued.length)} queued`);
  return chips;
}

function tokenLabel(total: TokenUsage, turn: TokenUsage | null): string {
  const parts = [`in ${number.format(total.inputTokens ?? 0)}`, `out ${number.format(total.outputTokens ?? 0)}`];
  if (total.cachedReadTokens) parts.push(`cached ${number.format(total.cachedReadTokens)}`);
  if (total.thoughtTokens) parts.push(`reasoning ${number.format(total.thoughtTokens)}`);
  const last = turn?.totalTokens ? `, last turn ${number.format(turn.totalTokens)}` : "";
  return `tokens ${number.format(total.totalTokens ?? 0)} (${parts.join(" · ")}${last})`;
}

function toolView(call: ToolCallView): ViewToolCall {
  return {
    id: call.id,
    title: oneLine(call.title),
    kind: oneLine(call.kind),
    status: call.status,
    statusLabel: STATUS_LABEL[call.status],
    preview: call.preview,
    more: call.hiddenLines > 0 ? `… ${String(call.hiddenLines)} more lines` : "",
    decision: call.decision ? oneLine(DECISION_LABEL[call.decision] ?? call.decision) : "",
    diffs: call.diffs.map(diffLabel),
    subagent: call.subagent
      ? oneLine(`${call.subagent.agent}${call.subagent.background ? " (background)" : ""} · session ${call.subagent.sessionId}`)
      : "",
    activity: (call.subagent?.activity ?? []).map(oneLine),
  };
}

export function diffLabel(diff: DiffPreview): string {
  const count = (text: string): number => (text === "" ? 0 : text.replace(/\n$/, "").split("\n").length);
  const path = oneLine(diff.path);
  if (diff.oldText === null) return `${path}: new file, ${String(count(diff.newText))} lines`;
  return `${path}: ${String(count(diff.oldText))} → ${String(count(diff.newText))} lines`;
}

/** Validate a message from the webview (it is untrusted input). */
export function parseWebviewMessage(value: unknown): WebviewMessage | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const message = value as Record<string, unknown>;
  switch (message.type) {
    case "prompt":
    case "queue":
      return typeof message.text === "string" ? { type: message.type, text: message.text } : undefined;
    case "addFiles": {
      const uris = message.uris;
      if (!Array.isArray(uris) || uris.length > 100) return undefined;
      const files = uris.filter((uri): uri is string => typeof uri === "string" && uri.startsWith("file:"));
      return { type: "addFiles", uris: files };
    }
    case "ready":
    case "cancel":
    case "newSession":
    case "sessions":
    case "showLog":
    case "dismissErrors":
      return { type: message.type };
    default:
      return undefined;
  }
}
