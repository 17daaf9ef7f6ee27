/**
 * The chat as a user sees it, through the protocol layer and the reducer, against the real
 * daemon with its built-in offline model.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";

import type { ChatController } from "../chat/controller";
import type { ChatState } from "../chat/state";
import type { Message, NotificationMessage } from "vscode-jsonrpc/node";
import type { PermissionOutcome, RequestPermissionParams } from "../protocol/types";
import { TestEnv, deferred, waitFor, within, type ChatOptions } from "./support/daemon";
import { agentText, onlyCall, thoughts, toolCalls, userTexts } from "./support/views";

const TIMEOUT = { timeout: 90_000 };

/** Run `body` with a controller; the daemon is always shut down and the temp dir removed. */
async function withChat(
  env: TestEnv,
  options: ChatOptions,
  body: (chat: ChatController) => Promise<void>,
): Promise<void> {
  const chat = env.controller(options);
  try {
    await body(chat);
  } finally {
    await within(chat.dispose(), 15_000, "daemon shutdown");
  }
}

function textOf(request: RequestPermissionParams): string {
  return (request.toolCall.content ?? []).map((entry) => (entry.type === "content" && entry.content.type === "text" ? entry.content.text : "")).join("\n");
}

describe("chat against the real daemon", () => {
  const envs: TestEnv[] = [];
  const newEnv = (): TestEnv => {
    const env = new TestEnv();
    envs.push(env);
    return env;
  };
  after(() => {
    for (const env of envs) env.cleanup();
  });

  test("a prompt streams its reply and its tool call into the chat state", TIMEOUT, async () => {
    const env = newEnv();
    env.writeFiles({ "alpha.txt": "a\n", "beta.md": "# b\n", "src/gamma.py": "print(1)\n" });
    await withChat(env, {}, async (chat) => {
      const snapshots: ChatState[] = [];
      chat.onDidChange((state) => snapshots.push(state));

      const result = await within(chat.send("list files"), 60_000, "prompt");

      assert.equal(result?.stopReason, "end_turn");
      const state = chat.state;
      assert.equal(state.busy, false);
      assert.equal(state.daemon.status, "ready");
      assert.deepEqual(userTexts(state), ["list files"]);
      const reply = agentText(state);
      assert.match(reply, /alpha\.txt/);
      assert.match(reply, /beta\.md/);
      assert.ok(thoughts(state).length > 0, "the model's reasoning is shown as thoughts");
      const call = onlyCall(state);
      assert.equal(call.kind, "read");
      assert.equal(call.status, "completed");
      assert.match(call.preview, /alpha\.txt/);
      assert.match(call.preview, /beta\.md/);
      // the reply streamed: the chat showed part of it before the end
      const partial = snapshots.find((s) => agentText(s).length > 0 && agentText(s).length < reply.length);
      assert.ok(partial, "some state showed a partial reply");
      // the tool call was seen running and then completed, as one item
      assert.ok(snapshots.some((s) => toolCalls(s)[0]?.status === "in_progress"));
      assert.equal(toolCalls(state).length, 1);
      // status: provider/model, tokens from _meta.cody.usage, context from usage_update
      const session = state.session;
      assert.ok(session);
      assert.equal(session.provider, "offline");
      assert.equal(session.model, "offline");
      assert.equal(session.title, "list files");
      assert.ok((state.usage.total?.totalTokens ?? 0) > 0);
      assert.ok((state.usage.turn?.outputTokens ?? 0) > 0);
      assert.ok((state.usage.contextUsed ?? 0) > 0);
      assert.equal(state.usage.contextSize, 32768);
      assert.equal(state.usage.cost?.currency, "USD");
      assert.deepEqual(state.errors, []);
    });
  });

  test("an approved command runs and its output shows up", TIMEOUT, async () => {
    const env = newEnv();
    const requests: RequestPermissionParams[] = [];
    const seen: ChatState[] = [];
    let chatRef: ChatController | undefined;
    const approvals = (request: RequestPermissionParams): Promise<PermissionOutcome> => {
      requests.push(request);
      if (chatRef) seen.push(chatRef.state);
      return Promise.resolve({ outcome: "selected", optionId: "allow_once" });
    };
    await withChat(env, { approvals }, async (chat) => {
      chatRef = chat;
      // the default policy runs a sandboxed command unasked: this one asks to leave the sandbox
      const result = await within(chat.send("run outside echo vscode-approved"), 60_000, "prompt");

      assert.equal(result?.stopReason, "end_turn");
      const [request] = requests;
      assert.ok(request);
      assert.equal(requests.length, 1);
      assert.match(textOf(request), /echo vscode-approved/);
      assert.match(textOf(request), new RegExp(`cwd: ${env.workspace}`));
      assert.deepEqual(
        request.options.map((o) => o.optionId),
        ["allow_once", "allow_always", "allow_project", "reject_once", "reject_always"],
      );
      assert.ok(request._meta?.cody.requestId !== undefined);
      assert.equal(request._meta.cody.justification, "you asked to run it outside the sandbox");
      // while the handler ran, the chat showed the pending approval with the command
      const shown = seen[0]?.pendingApproval;
      assert.ok(shown);
      assert.match(shown.text, /echo vscode-approved/);
      assert.equal(shown.kind, "execute");

      const state = chat.state;
      assert.equal(state.pendingApproval, null);
      const call = onlyCall(state);
      assert.equal(call.kind, "execute");
      assert.equal(call.status, "completed");
      assert.equal(call.decision, "allow_once");
      assert.match(call.preview, /vscode-approved/);
      assert.match(agentText(state), /vscode-approved/);
    });
  });

  test("a rejected edit shows its diff, is not written, and fails", TIMEOUT, async () => {
    const env = newEnv();
    const requests: RequestPermissionParams[] = [];
    const approvals = (request: RequestPermissionParams): Promise<PermissionOutcome> => {
      requests.push(request);
      return Promise.resolve({ outcome: "selected", optionId: "reject_once" });
    };
    // the `ask` mode's policy: an edit in the workspace asks
    await withChat(env, { approvals, sessionMeta: { approvalPolicy: "untrusted" } }, async (chat) => {
      const result = await within(chat.send("write x.txt: hi"), 60_000, "prompt");

      assert.equal(result?.stopReason, "end_turn", "a rejection does not end the turn early");
      const [request] = requests;
      assert.ok(request);
      const diff = request.toolCall.content?.find((entry) => entry.type === "diff");
      assert.ok(diff?.type === "diff", "the approval carries a diff");
      assert.equal(diff.path, join(env.workspace, "x.txt"));
      assert.equal(diff.newText, "hi");
      assert.equal(diff.oldText ?? null, null, "a new file has no old text");
      assert.equal(existsSync(join(env.workspace, "x.txt")), false);

      const call = onlyCall(chat.state);
      assert.equal(call.kind, "edit");
      assert.equal(call.status, "failed");
      assert.equal(call.decision, "reject_once");
      assert.match(call.preview, /User denied approval/);
      assert.match(agentText(chat.state), /User denied approval/);
    });
  });

  test("cancelling while an approval is pending withdraws it and ends the turn", TIMEOUT, async () => {
    const env = newEnv();
    const received: Message[] = [];
    const asked = deferred<RequestPermissionParams>();
    const withdrawn = deferred<boolean>();
    const approvals = (request: RequestPermissionParams, signal: AbortSignal): Promise<PermissionOutcome> => {
      asked.resolve(request);
      return new Promise((resolve) => {
        signal.addEventListener("abort", () => {
          withdrawn.resolve(true);
          resolve({ outcome: "cancelled" });
        });
      });
    };
    const observer = (direction: "send" | "receive", message: Message): void => {
      if (direction === "receive") received.push(message);
    };
    await withChat(env, { approvals, observer }, async (chat) => {
      const sending = chat.send("run outside touch never.txt");
      const request = await within(asked.promise, 60_000, "approval request");
      assert.ok(chat.state.pendingApproval, "the chat shows the pending approval");
      assert.equal(chat.state.busy, true);

      await chat.cancel();

      assert.equal(await within(withdrawn.promise, 10_000, "cancellation token"), true);
      const result = await within(sending, 10_000, "cancelled prompt");
      assert.equal(result?.stopReason, "cancelled");
      const requestId = request._meta?.cody.requestId;
      const cancels = received.filter((m): m is NotificationMessage => "method" in m && m.method === "$/cancelRequest" && !("id" in m));
      assert.deepEqual(
        cancels.map((m) => (m.params as { id: unknown }).id),
        [requestId],
        "the daemon withdrew the approval with $/cancelRequest",
      );
      assert.equal(existsSync(join(env.workspace, "never.txt")), false);
      const state = chat.state;
      assert.equal(state.busy, false);
      assert.equal(state.pendingApproval, null);
      assert.equal(state.lastStopReason, "cancelled");
      const call = onlyCall(state);
      assert.equal(call.status, "failed");
      assert.equal(call.decision, "withdrawn");
      assert.ok(state.items.some((item) => item.type === "notice" && /cancelled/i.test(item.text)));
      // the session still works after the withdrawn request
      const next = await within(chat.send("list files"), 60_000, "prompt after cancel");
      assert.equal(next?.stopReason, "end_turn");
    });
  });

  test("session/list and session/load replay a session into a fresh chat", TIMEOUT, async () => {
    const env = newEnv();
    env.writeFiles({ "alpha.txt": "a\n" });
    const allow = (): Promise<PermissionOutcome> => Promise.resolve({ outcome: "selected", optionId: "allow_once" });
    let sessionId: string | undefined;
    let live: ChatState | undefined;
    await withChat(env, { approvals: allow }, async (chat) => {
      await within(chat.send("list files"), 60_000, "first prompt");
      await within(chat.send("run echo replayed-output"), 60_000, "second prompt");
      sessionId = chat.state.session?.id;
      live = chat.state;
    });
    assert.ok(sessionId && live);

    // a new daemon (a new editor window): the session is listed and replays its history
    await withChat(env, {}, async (chat) => {
      const sessions = await within(chat.listSessions(), 30_000, "session/list");
      const listed = sessions.find((s) => s.sessionId === sessionId);
      assert.ok(listed, "the session is listed");
      assert.equal(listed.title, "list files");
      assert.equal(listed.cwd, env.workspace);

      assert.equal(await within(chat.openSession(listed), 30_000, "session/load"), true);

      const state = chat.state;
      assert.equal(state.loading, false);
      assert.equal(state.session?.id, sessionId);
      assert.equal(state.session?.title, "list files");
      assert.deepEqual(userTexts(state), ["list files", "run echo replayed-output"]);
      assert.equal(state.turn, 2);
      assert.match(agentText(state), /alpha\.txt/);
      assert.match(agentText(state), /replayed-output/);
      const calls = toolCalls(state);
      assert.deepEqual(
        calls.map((c) => [c.kind, c.status]),
        [
          ["read", "completed"],
          ["execute", "completed"],
        ],
      );
      assert.deepEqual(
        calls.map((c) => c.id),
        toolCalls(live ?? state).map((c) => c.id),
        "the same tool calls, each once",
      );
      assert.match(calls[0]?.preview ?? "", /alpha\.txt/);
      assert.match(calls[1]?.preview ?? "", /replayed-output/);
      // the replayed session goes on
      const next = await within(chat.send("list files"), 60_000, "prompt after load");
      assert.equal(next?.stopReason, "end_turn");
      assert.equal(chat.state.turn, 3);
    });
  });

  test("daemon errors reach the chat as readable errors", TIMEOUT, async () => {
    const env = newEnv();
    // an unknown provider: session/new fails with -32602 naming the key and the valid values
    await withChat(env, { sessionMeta: { provider: "nope" } }, async (chat) => {
      const result = await within(chat.send("hello"), 30_000, "prompt");
      assert.equal(result, undefined);
      const [error] = chat.state.errors;
      assert.ok(error, "an error is shown");
      assert.equal(error.kind, "config");
      assert.equal(error.code, -32602);
      assert.match(error.message, /_meta\.cody\.provider/, "names the setting the client sent");
      assert.match(error.message, /"nope"/);
      const detail = error.detail.join("\n");
      assert.match(detail, /model_provider: unknown provider \(got "nope"\); valid values: auto, openai, anthropic, openrouter, offline/);
      assert.equal(chat.state.busy, false);
      // the daemon is still up: listing sessions works
      assert.deepEqual(await chat.listSessions(), []);
      assert.equal(chat.state.daemon.status, "ready");
    });

    // a provider without credentials: the prompt fails with -32000 saying how to fix it
    await withChat(env, { sessionMeta: { provider: "openai" } }, async (chat) => {
      const result = await within(chat.send("hello"), 30_000, "prompt");
      assert.equal(result, undefined);
      const error = chat.state.errors.at(-1);
      assert.ok(error);
      assert.equal(error.kind, "auth");
      assert.match(error.message, /OPENAI_API_KEY/);
      const last = chat.state.items.at(-1);
      assert.equal(last?.type, "error", "the error is shown in the transcript after the prompt");
      assert.equal(chat.state.busy, false);
    });

    // a daemon command that does not exist
    await withChat(env, { argv: [join(env.root, "no-such-daemon")] }, async (chat) => {
      assert.equal(await chat.send("hello"), undefined);
      const error = chat.state.errors.at(-1);
      assert.ok(error);
      assert.equal(error.kind, "daemon");
      assert.match(error.message, /Could not start the Cody daemon .*no-such-daemon.*ENOENT/);
      assert.match(error.detail.join("\n"), /cody\.daemon\.command/);
    });

    // a daemon that exits at once: the exit code and its stderr are shown
    const dying = [process.execPath, "-e", "console.error('boom: bad install'); process.exit(3)"];
    await withChat(env, { argv: dying }, async (chat) => {
      assert.equal(await chat.send("hello"), undefined);
      const error = chat.state.errors.at(-1);
      assert.match(error?.message ?? "", /exited \(exit code 3\) before answering initialize/);
      assert.match(error?.detail.join("\n") ?? "", /boom: bad install/);
    });
  });

  test("a daemon that dies mid-session is reported and started again by the next prompt", TIMEOUT, async () => {
    const env = newEnv();
    await withChat(env, {}, async (chat) => {
      await within(chat.send("list files"), 60_000, "first prompt");
      const client = chat.activeClient;
      const pid = client?.pid;
      assert.ok(pid);
      process.kill(pid, "SIGKILL");
      await waitFor(() => chat.state.daemon.status === "exited", 10_000, "exit noticed");
      assert.match(chat.state.errors.at(-1)?.message ?? "", /stopped unexpectedly \(signal SIGKILL\)/);

      const next = await within(chat.send("list files"), 60_000, "prompt after restart");
      assert.equal(next?.stopReason, "end_turn");
      assert.equal(chat.state.daemon.status, "ready");
      assert.notEqual(chat.activeClient?.pid, pid);
      assert.deepEqual(userTexts(chat.state), ["list files", "list files"], "the same session was resumed");
    });
  });

  test("a settings change restarts the daemon and the session goes on with the new settings", TIMEOUT, async () => {
    const env = newEnv();
    const asked: string[] = [];
    const approvals = (request: RequestPermissionParams): Promise<PermissionOutcome> => {
      asked.push(request.toolCall.title);
      return Promise.resolve({ outcome: "selected", optionId: "allow_once" });
    };
    await withChat(env, { approvals }, async (chat) => {
      await within(chat.send("run outside echo first"), 60_000, "first prompt");
      assert.deepEqual(asked, ["echo first"]);
      const sessionId = chat.state.session?.id;
      const pid = chat.activeClient?.pid;

      await within(chat.restart(env.controllerOptions({ approvals, sessionMeta: { approvalPolicy: "never" } })), 30_000, "restart");

      assert.equal(chat.state.daemon.status, "ready");
      assert.notEqual(chat.activeClient?.pid, pid, "a new daemon process");
      assert.deepEqual(chat.state.errors, [], "a requested restart is not an error");
      const result = await within(chat.send("run echo second"), 60_000, "second prompt");
      assert.equal(result?.stopReason, "end_turn", JSON.stringify(chat.state.errors));
      assert.deepEqual(asked, ["echo first"], "approval policy never: no approval asked");
      const session = chat.state.session;
      assert.ok(session);
      assert.equal(session.id, sessionId, "the same session, resumed");
      assert.equal(session.configOptions.find((o) => o.id === "approval_policy")?.currentValue, "never");
      assert.deepEqual(
        toolCalls(chat.state).map((c) => c.status),
        ["completed", "completed"],
      );
    });
  });
});
