/**
 * How `session/update` notifications and approval requests change the chat state (the
 * `sessionUpdate` half of the reducer in `state.ts`).
 *
 * Invariants: pure, no `vscode` import; the input is never mutated; one item per tool call.
 */

import type {
  CodyUpdateMeta,
  ContentBlock,
  RequestPermissionParams,
  SessionConfigOption,
  SessionNotification,
  ToolCallContent,
  ToolCallStart,
  ToolCallUpdate,
} from "../protocol/types";
import type { ChatItem, ChatState, DiffPreview, PendingApproval, SubagentView, ToolCallView } from "./state";

/** At most this many lines of a child's activity are kept under its `task` call. */
export const MAX_ACTIVITY = 50;

export const PREVIEW_LINES = 12;
export const PREVIEW_CHARS = 2000;

export function optionValue(options: SessionConfigOption[], id: string): string | null {
  return options.find((option) => option.id === id)?.currentValue ?? null;
}

export function applyUpdate(state: ChatState, update: SessionNotification["update"]): ChatState {
  switch (update.sessionUpdate) {
    case "user_message_chunk":
      return appendUserChunk(state, blockText(update.content), update.messageId ?? undefined);
    case "agent_message_chunk":
      return { ...state, items: appendText(state.items, "agent", state.turn, blockText(update.content)) };
    case "agent_thought_chunk":
      return { ...state, items: appendText(state.items, "thought", state.turn, blockText(update.content)) };
    case "tool_call":
      return { ...state, items: upsertCall(state.items, state.turn, update) };
    case "tool_call_update":
      return { ...state, items: upsertCall(state.items, state.turn, update) };
    case "plan":
      return { ...state, plan: update.entries };
    case "usage_update":
      return {
        ...state,
        usage: { ...state.usage, contextUsed: update.used, contextSize: update.size, cost: update.cost ?? state.usage.cost },
      };
    case "config_option_update": {
      if (!state.session) return state;
      const options = update.configOptions;
      return {
        ...state,
        session: {
          ...state.session,
          configOptions: options,
          provider: optionValue(options, "provider") ?? state.session.provider,
          model: optionValue(options, "model") ?? state.session.model,
        },
      };
    }
    case "current_mode_update":
      return state.session ? { ...state, session: { ...state.session, modeId: update.currentModeId } } : state;
    case "session_info_update":
      if (!state.session || update.title === undefined || update.title === null) return state;
      return { ...state, session: { ...state.session, title: update.title } };
    default:
      // An update kind this view does not show (e.g. `available_commands_update`): ACP lets
      // agents send new kinds, and the state must survive them.
      return state;
  }
}

function blockText(block: ContentBlock): string {
  return block.type === "text" ? block.text : `[${block.type}]`;
}

/** Replayed user text: a new turn begins unless the previous item is this turn's user text. */
/** A chunk of a user message (a replay, or a message steered into the running turn): it
 * continues the last user item only when it is the same message (same `messageId`). */
function appendUserChunk(state: ChatState, text: string, messageId: string | undefined): ChatState {
  const last = state.items.at(-1);
  if (last?.type === "user" && last.turn === state.turn && last.messageId === messageId) {
    return { ...state, items: [...state.items.slice(0, -1), { ...last, text: last.text + text }] };
  }
  const turn = state.turn + 1;
  const item: ChatItem = messageId === undefined ? { type: "user", turn, text } : { type: "user", turn, text, messageId };
  return { ...state, turn, items: [...state.items, item] };
}

function appendText(items: ChatItem[], type: "agent" | "thought", turn: number, text: string): ChatItem[] {
  const last = items.at(-1);
  if (last && last.type === type && last.turn === turn) {
    return [...items.slice(0, -1), { ...last, text: last.text + text }];
  }
  return [...items, { type, turn, text }];
}

function upsertCall(items: ChatItem[], turn: number, update: ToolCallStart | ToolCallUpdate): ChatItem[] {
  const index = items.findIndex((item) => item.type === "tool" && item.call.id === update.toolCallId);
  const existing = index >= 0 ? items[index] : undefined;
  const base: ToolCallView =
    existing?.type === "tool"
      ? existing.call
      : { id: update.toolCallId, title: update.toolCallId, kind: "other", status: "pending", preview: "", hiddenLines: 0, diffs: [] };
  const call: ToolCallView = { ...base };
  if (update.title) call.title = update.title;
  if (update.kind) call.kind = update.kind;
  if (update.status) call.status = update.status;
  if (update.rawInput !== undefined && update.rawInput !== null) call.rawInput = update.rawInput;
  if (update.content) Object.assign(call, contentView(update.content));
  const child = childOf(update._meta);
  if (child && !call.subagent) call.subagent = { ...child, activity: [] };
  if (existing?.type === "tool") {
    return items.map((item, i) => (i === index ? { ...existing, call } : item));
  }
  return [...items, { type: "tool", turn, call }];
}

/** `_meta.cody` of a `task` call's update that names the child session it started. */
function childOf(meta: unknown): Omit<SubagentView, "activity"> | null {
  if (typeof meta !== "object" || meta === null) return null;
  const cody = (meta as { cody?: unknown }).cody;
  if (typeof cody !== "object" || cody === null) return null;
  const { childSessionId, agent, background } = cody as Record<string, unknown>;
  if (typeof childSessionId !== "string") return null;
  return { sessionId: childSessionId, agent: typeof agent === "string" ? agent : "subagent", background: background === true };
}

/** A child session's update: one activity line under the parent's `task` call. */
export function applyChildUpdate(state: ChatState, parent: CodyUpdateMeta, notification: SessionNotification): ChatState {
  const update = notification.update;
  let line: string | null = null;
  if (update.sessionUpdate === "tool_call") line = `▸ ${update.title}`;
  else if (update.sessionUpdate === "tool_call_update" && update.status === "failed") line = `✗ ${update.title ?? update.toolCallId}`;
  if (line === null || !parent.parentToolCallId) return state;
  const entry = line;
  const items = mapCall(state.items, parent.parentToolCallId, (call) => {
    const subagent: SubagentView = call.subagent ?? {
      sessionId: notification.sessionId,
      agent: parent.agent ?? "subagent",
      background: false,
      activity: [],
    };
    return { ...call, subagent: { ...subagent, activity: [...subagent.activity, entry].slice(-MAX_ACTIVITY) } };
  });
  return { ...state, items };
}

export function mapCall(items: ChatItem[], id: string, change: (call: ToolCallView) => ToolCallView): ChatItem[] {
  return items.map((item) => (item.type === "tool" && item.call.id === id ? { ...item, call: change(item.call) } : item));
}

/** Calls left pending or running when the turn ended did not complete. */
export function closeOpenCalls(items: ChatItem[], status: "failed"): ChatItem[] {
  if (!items.some((item) => item.type === "tool" && (item.call.status === "pending" || item.call.status === "in_progress"))) {
    return items;
  }
  return items.map((item) =>
    item.type === "tool" && (item.call.status === "pending" || item.call.status === "in_progress")
      ? { ...item, call: { ...item.call, status } }
      : item,
  );
}

function contentView(content: ToolCallContent[]): Pick<ToolCallView, "preview" | "hiddenLines" | "diffs"> {
  const texts: string[] = [];
  const diffs: DiffPreview[] = [];
  for (const entry of content) {
    if (entry.type === "diff") diffs.push({ path: entry.path, oldText: entry.oldText ?? null, newText: entry.newText });
    else if (entry.type === "content") texts.push(blockText(entry.content));
  }
  return { ...previewOf(texts.join("\n")), diffs };
}

/** The first `PREVIEW_LINES` lines (at most `PREVIEW_CHARS` characters) of an output. */
export function previewOf(text: string): { preview: string; hiddenLines: number } {
  const trimmed = text.replace(/\s+$/, "");
  const lines = trimmed === "" ? [] : trimmed.split("\n");
  let preview = lines.slice(0, PREVIEW_LINES).join("\n");
  if (preview.length > PREVIEW_CHARS) preview = `${preview.slice(0, PREVIEW_CHARS)}…`;
  return { preview, hiddenLines: Math.max(0, lines.length - PREVIEW_LINES) };
}

export function pendingApproval(request: RequestPermissionParams): PendingApproval {
  const texts: string[] = [];
  const diffs: DiffPreview[] = [];
  for (const entry of request.toolCall.content ?? []) {
    if (entry.type === "diff") diffs.push({ path: entry.path, oldText: entry.oldText ?? null, newText: entry.newText });
    else if (entry.type === "content") texts.push(blockText(entry.content));
  }
  const meta = request._meta?.cody;
  return {
    requestId: meta ? String(meta.requestId) : request.toolCall.toolCallId,
    sessionId: request.sessionId,
    toolCallId: request.toolCall.toolCallId,
    title: request.toolCall.title,
    kind: request.toolCall.kind,
    text: texts.join("\n"),
    diffs,
    options: request.options,
    sandboxed: meta?.sandboxed ?? null,
  };
}
