/** Test helpers: read what the chat view would show out of a `ChatState`. */

import type { ChatState, ToolCallView } from "../../chat/state";

export function agentText(state: ChatState): string {
  return state.items.map((item) => (item.type === "agent" ? item.text : "")).join("");
}

export function userTexts(state: ChatState): string[] {
  return state.items.flatMap((item) => (item.type === "user" ? [item.text] : []));
}

export function thoughts(state: ChatState): string[] {
  return state.items.flatMap((item) => (item.type === "thought" ? [item.text] : []));
}

export function toolCalls(state: ChatState): ToolCallView[] {
  return state.items.flatMap((item) => (item.type === "tool" ? [item.call] : []));
}

export function onlyCall(state: ChatState): ToolCallView {
  const calls = toolCalls(state);
  if (calls.length !== 1) throw new Error(`expected one tool call, got ${String(calls.length)}: ${JSON.stringify(calls)}`);
  const [call] = calls;
  if (!call) throw new Error("unreachable");
  return call;
}
