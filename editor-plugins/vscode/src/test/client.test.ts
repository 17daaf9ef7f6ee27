/** The protocol layer on its own: `CodyClient` against the real daemon (and one stubborn fake). */

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";

import { CodyClient } from "../protocol/client";
import type { McpStatusNotification, SessionNotification } from "../protocol/types";
import { CodyError } from "../protocol/errors";
import { TestEnv, waitFor, within } from "./support/daemon";

const TIMEOUT = { timeout: 90_000 };

describe("CodyClient", () => {
  const env = new TestEnv();
  after(() => {
    env.cleanup();
  });

  test("initialize, models, sessions, modes, config options, MCP status and a clean shutdown", TIMEOUT, async () => {
    const stderr: string[] = [];
    const traced: string[] = [];
    const client = await CodyClient.start(
      env.clientOptions({
        onStderr: (line) => stderr.push(line),
        trace: "verbose",
        tracer: { log: (message: unknown, data?: string) => traced.push(`${String(message)} ${data ?? ""}`) },
      }),
    );
    const exits: { expected: boolean; code: number | null }[] = [];
    client.onExit((exit) => exits.push(exit));
    try {
      const init = client.initializeResult;
      assert.equal(init.agentInfo.name, "cody");
      assert.equal(init.protocolVersion, 1);
      assert.equal(init._meta.cody.defaultProvider, "offline", "no API keys, so auto is offline");
      assert.ok(init._meta.cody.extensions.includes("_cody/models/list"));

      const models = await client.listModels();
      const offline = models.providers.find((p) => p.id === "offline");
      assert.ok(offline);
      assert.equal(offline.available, true);
      assert.deepEqual(
        offline.models.map((m) => m.id),
        ["offline"],
      );

      const mcp: McpStatusNotification[] = [];
      const updates: SessionNotification[] = [];
      client.onMcpStatus((status) => mcp.push(status));
      client.onSessionUpdate((n) => updates.push(n));
      const session = await client.newSession({
        cwd: env.workspace,
        mcpServers: [{ name: "broken", command: join(env.root, "no-such-mcp-server"), args: [], env: [] }],
        meta: { approvalPolicy: "on-request", sandboxMode: "workspace-write", model: "" },
      });
      assert.equal(session._meta?.cody.provider, "offline");
      assert.equal(session.modes.currentModeId, "auto");
      await waitFor(() => mcp.some((s) => s.state === "failed"), 15_000, "MCP failure reported");
      const failed = mcp.find((s) => s.state === "failed");
      assert.ok(failed);
      assert.equal(failed.server, "broken");
      assert.equal(failed.sessionId, session.sessionId);
      assert.match(failed.reason ?? "", /no-such-mcp-server/);

      await client.setMode(session.sessionId, "read-only");
      await waitFor(
        () => updates.some((u) => u.update.sessionUpdate === "current_mode_update" && u.update.currentModeId === "read-only"),
        5_000,
        "current_mode_update",
      );
      const set = await client.setConfigOption(session.sessionId, "approval_policy", "never");
      assert.equal(set.configOptions.find((o) => o.id === "approval_policy")?.currentValue, "never");

      // session/list shows sessions with at least one prompt (an empty chat is not saved).
      const unlisted = await client.listSessions({ cwd: env.workspace });
      assert.ok(!unlisted.sessions.some((s) => s.sessionId === session.sessionId));
      assert.equal((await client.prompt(session.sessionId, "list files")).stopReason, "end_turn");
      const listed = await client.listSessions({ cwd: env.workspace });
      assert.ok(listed.sessions.some((s) => s.sessionId === session.sessionId));
      await client.closeSession(session.sessionId);
      const resumed = await client.resumeSession({ sessionId: session.sessionId, cwd: env.workspace });
      assert.equal(resumed.configOptions.find((o) => o.id === "approval_policy")?.currentValue, "never", "settings persist");

      await assert.rejects(client.loadSession({ sessionId: "no-such-session", cwd: env.workspace }), (error: unknown) => {
        assert.ok(error instanceof CodyError);
        assert.equal(error.kind, "not_found");
        assert.equal(error.code, -32002);
        return true;
      });
      assert.ok(traced.some((line) => line.includes("session/new")), "the protocol trace is written");
    } finally {
      const exit = await within(client.shutdown(), 15_000, "shutdown");
      assert.equal(exit.code, 0);
    }
    assert.equal(client.running, false);
    await waitFor(() => exits.length === 1, 5_000, "exit event");
    assert.deepEqual(exits, [{ code: 0, signal: null, expected: true }]);
    await assert.rejects(client.listSessions(), /The Cody daemon exited \(exit code 0\)/);
    assert.equal(stderr.filter((line) => /Traceback/.test(line)).length, 0);
  });

  test("an approval with no handler is answered as an error, which the daemon counts as a rejection", TIMEOUT, async () => {
    const client = await CodyClient.start(env.clientOptions());
    try {
      const updates: SessionNotification[] = [];
      client.onSessionUpdate((n) => updates.push(n));
      const { sessionId } = await client.newSession({ cwd: env.workspace });
      const result = await within(client.prompt(sessionId, "run outside touch unhandled.txt"), 60_000, "prompt");
      assert.equal(result.stopReason, "end_turn");
      const final = updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
      assert.equal(final?.sessionUpdate === "tool_call_update" ? final.status : undefined, "failed");
    } finally {
      await within(client.shutdown(), 15_000, "shutdown");
    }
  });

  test("a tracer that throws loses its lines but not the shutdown reply: exit is still sent", TIMEOUT, async () => {
    const sent: string[] = [];
    const client = await CodyClient.start(
      env.clientOptions({
        trace: "verbose",
        tracer: {
          log: () => {
            throw new Error("Channel has been closed");
          },
        },
        observer: (direction, message) => {
          if (direction === "send" && "method" in message && typeof message.method === "string") sent.push(message.method);
        },
        shutdownTimeoutMs: 30_000,
      }),
    );
    const { sessionId } = await within(client.newSession({ cwd: env.workspace }), 30_000, "session/new");
    assert.ok(sessionId, "requests are answered although every trace line throws");
    const exit = await within(client.shutdown(), 15_000, "shutdown");
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.deepEqual(sent.slice(-2), ["shutdown", "exit"]);
  });

  test("a daemon that ignores shutdown is killed after the timeout", TIMEOUT, async () => {
    const argv = [process.execPath, join(__dirname, "support", "stubborn-daemon.js")];
    const [command, ...args] = argv;
    assert.ok(command);
    const client = await CodyClient.start({ daemon: { command, args, env: env.env }, shutdownTimeoutMs: 300 });
    assert.equal(client.initializeResult.agentInfo.name, "stubborn");
    const started = Date.now();
    const exit = await within(client.shutdown(), 10_000, "forced shutdown");
    assert.equal(exit.signal, "SIGKILL", "SIGTERM is ignored, so SIGKILL follows");
    assert.ok(Date.now() - started >= 300, "it waited for the timeout first");
    assert.equal(client.running, false);
  });
});
