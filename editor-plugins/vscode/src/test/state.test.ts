/** The chat reducer on its own: pure transitions, no daemon. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { PREVIEW_LINES, initialState, reduce, type ChatEvent, type ChatState } from "../chat/state";
import type { SessionStateResult, SessionUpdate } from "../protocol/types";
import { agentText, onlyCall, thoughts, userTexts } from "./support/views";

const SESSION = "s-1";

const opened: SessionStateResult = {
  modes: { currentModeId: "auto", availableModes: [{ id: "auto", name: "Auto" }] },
  configOptions: [
    { id: "provider", name: "Provider", currentValue: "offline", options: [] },
    { id: "model", name: "Model", currentValue: "offline", options: [] },
  ],
  _meta: { cody: { provider: "offline", model: "offline", sessionFile: "/x.jsonl", warnings: ["w"] } },
};

function run(events: ChatEvent[], start: ChatState = initialState()): ChatState {
  return events.reduce(reduce, start);
}

function update(update: SessionUpdate, sessionId = SESSION): ChatEvent {
  return { type: "sessionUpdate", notification: { sessionId, update } };
}

const text = (t: string): { type: "text"; text: string } => ({ type: "text", text: t });

function live(): ChatState {
  return run([
    { type: "sessionOpened", sessionId: SESSION, cwd: "/w", result: opened },
    { type: "promptStarted", text: "list files" },
  ]);
}

describe("reduce", () => {
  test("a child session's calls are nested under the parent's task call; others' are ignored", () => {
    const child = (u: SessionUpdate, parent = SESSION): ChatEvent => ({
      type: "sessionUpdate",
      notification: { sessionId: "child-1", update: u, _meta: { cody: { parentSessionId: parent, parentToolCallId: "t1", agent: "explore" } } },
    });
    const state = run(
      [
        update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "explore: look", kind: "other", status: "pending" }),
        update({
          sessionUpdate: "tool_call_update",
          toolCallId: "t1",
          _meta: { cody: { childSessionId: "child-1", agent: "explore", background: false } },
        }),
        child({ sessionUpdate: "tool_call", toolCallId: "c1", title: "Read a.txt", kind: "read", status: "pending" }),
        child({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "failed", title: "Read a.txt" }),
        child({ sessionUpdate: "tool_call", toolCallId: "c2", title: "elsewhere", kind: "read", status: "pending" }, "other"),
        child({ sessionUpdate: "agent_message_chunk", content: text("the child's answer") }),
      ],
      live(),
    );
    const call = onlyCall(state);
    assert.deepEqual(call.subagent, {
      sessionId: "child-1",
      agent: "explore",
      background: false,
      activity: ["▸ Read a.txt", "✗ Read a.txt"],
    });
    assert.equal(agentText(state), "", "the child's text is its answer, shown as the call's result");
  });

  test("streams chunks into one message per kind and turn, in order", () => {
    const state = run(
      [
        update({ sessionUpdate: "agent_thought_chunk", content: text("thinking ") }),
        update({ sessionUpdate: "agent_thought_chunk", content: text("more") }),
        update({ sessionUpdate: "agent_message_chunk", content: text("Hel") }),
        update({ sessionUpdate: "agent_message_chunk", content: text("lo") }),
      ],
      live(),
    );
    assert.deepEqual(userTexts(state), ["list files"]);
    assert.deepEqual(thoughts(state), ["thinking more"]);
    assert.equal(agentText(state), "Hello");
    assert.deepEqual(
      state.items.map((i) => i.type),
      ["user", "thought", "agent"],
    );
    assert.equal(state.busy, true);
  });

  test("a tool call is one item that takes its final status, output preview and diffs", () => {
    const lines = Array.from({ length: PREVIEW_LINES + 3 }, (_, i) => `line ${String(i)}`).join("\n");
    const state = run(
      [
        update({ sessionUpdate: "tool_call", toolCallId: "c1", title: "echo", kind: "execute", status: "pending", rawInput: { command: "echo" } }),
        update({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "in_progress" }),
        update({ sessionUpdate: "tool_call_update", toolCallId: "c1", content: [{ type: "content", content: text("partial") }] }),
        update({
          sessionUpdate: "tool_call_update",
          toolCallId: "c1",
          status: "completed",
          content: [
            { type: "content", content: text(lines) },
            { type: "diff", path: "/w/a.txt", newText: "new\n" },
          ],
        }),
      ],
      live(),
    );
    const call = onlyCall(state);
    assert.equal(call.status, "completed");
    assert.equal(call.title, "echo");
    assert.equal(call.kind, "execute");
    assert.deepEqual(call.rawInput, { command: "echo" });
    assert.equal(call.preview.split("\n").length, PREVIEW_LINES);
    assert.equal(call.hiddenLines, 3);
    assert.deepEqual(call.diffs, [{ path: "/w/a.txt", oldText: null, newText: "new\n" }]);
  });

  test("status comes from usage_update, the prompt's _meta.cody and config updates", () => {
    const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
    const state = run(
      [
        update({ sessionUpdate: "usage_update", used: 100, size: 1000, cost: { amount: 0.5, currency: "USD" } }),
        update({ sessionUpdate: "session_info_update", title: "list files" }),
        update({ sessionUpdate: "current_mode_update", currentModeId: "read-only" }),
        update({
          sessionUpdate: "config_option_update",
          configOptions: [
            { id: "provider", name: "Provider", currentValue: "openai", options: [] },
            { id: "model", name: "Model", currentValue: "gpt-x", options: [] },
          ],
        }),
        {
          type: "promptFinished",
          result: { stopReason: "end_turn", _meta: { cody: { turnId: "t", usage: { last: usage, turn: usage, total: usage }, cost: { last: 1, turn: 1, total: 2.5 } } } },
        },
      ],
      live(),
    );
    assert.equal(state.busy, false);
    assert.equal(state.usage.contextUsed, 100);
    assert.equal(state.usage.contextSize, 1000);
    assert.deepEqual(state.usage.total, usage);
    assert.deepEqual(state.usage.cost, { amount: 2.5, currency: "USD" });
    assert.equal(state.session?.title, "list files");
    assert.equal(state.session.modeId, "read-only");
    assert.equal(state.session.provider, "openai");
    assert.equal(state.session.model, "gpt-x");
    assert.equal(state.lastStopReason, "end_turn");
  });

  test("updates for another session are ignored", () => {
    const before = live();
    const after = reduce(before, update({ sessionUpdate: "agent_message_chunk", content: text("other") }, "s-2"));
    assert.equal(after, before);
  });

  test("approvals are pending until resolved, and the decision stays on the call", () => {
    let state = run(
      [
        update({ sessionUpdate: "tool_call", toolCallId: "c1", title: "touch x", kind: "execute" }),
        {
          type: "approvalRequested",
          request: {
            sessionId: SESSION,
            toolCall: { toolCallId: "c1", title: "touch x", kind: "execute", content: [{ type: "content", content: text("$ touch x\ncwd: /w") }] },
            options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }],
            _meta: { cody: { requestId: "cody-1", sandboxed: false } },
          },
        },
      ],
      live(),
    );
    assert.equal(state.pendingApproval?.requestId, "cody-1");
    assert.equal(state.pendingApproval.text, "$ touch x\ncwd: /w");
    assert.equal(state.pendingApproval.sandboxed, false);
    state = reduce(state, { type: "approvalResolved", toolCallId: "c1", decision: "selected", optionId: "allow_once" });
    assert.equal(state.pendingApproval, null);
    assert.equal(onlyCall(state).decision, "allow_once");
  });

  test("a cancelled turn closes open calls and says so; a failed prompt shows the error", () => {
    let state = run(
      [
        update({ sessionUpdate: "tool_call", toolCallId: "c1", title: "sleep", kind: "execute", status: "in_progress" }),
        { type: "promptFinished", result: { stopReason: "cancelled" } },
      ],
      live(),
    );
    assert.equal(onlyCall(state).status, "failed");
    assert.equal(state.items.at(-1)?.type, "notice");
    state = run(
      [
        { type: "promptStarted", text: "again" },
        { type: "promptFailed", error: { kind: "auth", message: "No credentials", detail: [] } },
      ],
      state,
    );
    assert.equal(state.busy, false);
    assert.equal(state.items.at(-1)?.type, "error");
    assert.equal(state.errors.length, 1);
    assert.equal(state.turn, 2);
  });

  test("load replay rebuilds turns from user chunks; a new session starts empty", () => {
    let state = run([
      { type: "sessionLoading", sessionId: SESSION, cwd: "/w", title: "old" },
      update({ sessionUpdate: "user_message_chunk", content: text("one") }),
      update({ sessionUpdate: "agent_message_chunk", content: text("reply one") }),
      update({ sessionUpdate: "tool_call", toolCallId: "c1", title: "ls", kind: "read", status: "completed" }),
      update({ sessionUpdate: "user_message_chunk", content: text("two") }),
      update({ sessionUpdate: "agent_message_chunk", content: text("reply two") }),
      { type: "sessionOpened", sessionId: SESSION, cwd: "/w", result: opened },
    ]);
    assert.equal(state.loading, false);
    assert.equal(state.turn, 2);
    assert.deepEqual(userTexts(state), ["one", "two"]);
    assert.deepEqual(
      state.items.filter((i) => i.type === "agent").map((i) => i.turn),
      [1, 2],
    );
    assert.equal(state.session?.title, "old", "the listed title is kept");
    assert.deepEqual(state.session.warnings, ["w"]);
    state = reduce(state, { type: "sessionOpened", sessionId: "s-2", cwd: "/w", result: opened });
    assert.deepEqual(state.items, []);
    assert.equal(state.turn, 0);
  });

  test("MCP status is kept per server for the session it belongs to", () => {
    let state = reduce(initialState(), { type: "mcpStatus", status: { sessionId: SESSION, server: "fs", state: "starting" } });
    state = reduce(state, { type: "mcpStatus", status: { sessionId: SESSION, server: "fs", state: "failed", reason: "not found" } });
    state = reduce(state, { type: "mcpStatus", status: { sessionId: "other", server: "web", state: "ready", tools: 2 } });
    state = reduce(state, { type: "sessionOpened", sessionId: SESSION, cwd: "/w", result: opened });
    assert.deepEqual(state.mcp, { fs: { sessionId: SESSION, state: "failed", tools: 0, reason: "not found" } });
  });

  test("an unexpected daemon exit is an error and ends the turn; an expected one is quiet", () => {
    const crashed = reduce(live(), { type: "daemonExited", code: null, signal: "SIGKILL", expected: false });
    assert.equal(crashed.busy, false);
    assert.equal(crashed.daemon.status, "exited");
    assert.match(crashed.errors[0]?.message ?? "", /stopped unexpectedly \(signal SIGKILL\)/);
    const stopped = reduce(live(), { type: "daemonExited", code: 0, signal: null, expected: true });
    assert.deepEqual(stopped.errors, []);
  });

  test("the input state is never mutated", () => {
    const before = live();
    const snapshot = JSON.stringify(before);
    run(
      [
        update({ sessionUpdate: "agent_message_chunk", content: text("x") }),
        update({ sessionUpdate: "tool_call", toolCallId: "c1", title: "t" }),
        { type: "promptFinished", result: { stopReason: "end_turn" } },
      ],
      before,
    );
    assert.equal(JSON.stringify(before), snapshot);
  });
});
