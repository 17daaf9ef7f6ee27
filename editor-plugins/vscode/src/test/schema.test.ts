/**
 * `types.ts` against `protocol/schema/cody-protocol.schema.json`: every message this client
 * sends and receives in a session that uses all of its methods is recorded on the wire and
 * validated (ajv, JSON Schema 2020-12) against the schema definition its type is written from.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";

import Ajv2020 from "ajv/dist/2020";
import type { Message } from "vscode-jsonrpc/node";

import { CodyClient } from "../protocol/client";
import type { PermissionOutcome, RequestPermissionParams } from "../protocol/types";
import { TestEnv, deferred, repoRoot, within } from "./support/daemon";

/** `$defs` name for the params of each method (both directions). */
const PARAMS: Record<string, string> = {
  initialize: "InitializeParams",
  "session/new": "NewSessionParams",
  "session/load": "LoadSessionParams",
  "session/resume": "LoadSessionParams",
  "session/list": "ListSessionsParams",
  "session/close": "SessionIdParams",
  "session/prompt": "PromptParams",
  "session/cancel": "CancelParams",
  "session/set_mode": "SetModeParams",
  "session/set_config_option": "SetConfigOptionParams",
  "session/update": "SessionNotification",
  "session/request_permission": "RequestPermissionParams",
  "_cody/mcp/status": "McpStatusNotification",
};

/** `$defs` name for the result of each request (both directions). */
const RESULTS: Record<string, string> = {
  initialize: "InitializeResult",
  "session/new": "NewSessionResult",
  "session/load": "SessionStateResult",
  "session/resume": "SessionStateResult",
  "session/list": "ListSessionsResult",
  "session/prompt": "PromptResult",
  "session/set_config_option": "SetConfigOptionResult",
  "_cody/models/list": "ModelsListResult",
  "session/request_permission": "RequestPermissionResult",
};

/** Messages without a schema definition: LSP lifecycle and cancellation, empty results. */
const UNCHECKED = new Set(["shutdown", "exit", "$/cancelRequest", "_cody/models/list params", "session/set_mode result", "session/close result", "shutdown result"]);

interface Recorded {
  direction: "send" | "receive";
  message: Record<string, unknown>;
}

const env = new TestEnv();
after(() => {
  env.cleanup();
});

test("every message on the wire matches the protocol schema", { timeout: 120_000 }, async () => {
  const schemaPath = join(repoRoot(), "protocol", "schema", "cody-protocol.schema.json");
  const schema = JSON.parse(readFileSync(schemaPath, "utf8")) as Record<string, unknown>;
  // `discriminator` (OpenAPI) and `x-top-level` are annotations for other tools; oneOf decides.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema(schema, "cody");
  const control = ajv.getSchema("cody#/$defs/SessionNotification");
  assert.equal(control?.({ sessionId: "s", update: { sessionUpdate: "tool_call_update", status: "done" } }), false, "the schema catches a bad message");

  const recorded: Recorded[] = [];
  const observer = (direction: "send" | "receive", message: Message): void => {
    recorded.push({ direction, message: JSON.parse(JSON.stringify(message)) as Record<string, unknown> });
  };
  env.writeFiles({ "a.txt": "a\n" });
  const client = await CodyClient.start(env.clientOptions({ observer }));
  const asked = deferred<undefined>();
  const answers: (PermissionOutcome | "wait")[] = [
    { outcome: "selected", optionId: "allow_once" },
    { outcome: "selected", optionId: "reject_once" },
    "wait",
  ];
  client.setApprovalHandler((_request: RequestPermissionParams, signal: AbortSignal) => {
    const answer = answers.shift() ?? "wait";
    if (answer !== "wait") return Promise.resolve(answer);
    asked.resolve(undefined);
    return new Promise((resolve) => {
      signal.addEventListener("abort", () => {
        resolve({ outcome: "cancelled" });
      });
    });
  });
  try {
    await client.listModels();
    const { sessionId } = await client.newSession({
      cwd: env.workspace,
      mcpServers: [{ name: "broken", command: join(env.root, "missing-mcp"), args: [], env: [] }],
      meta: { approvalPolicy: "untrusted", sandboxMode: "workspace-write" },
    });
    await within(client.prompt(sessionId, "list files"), 60_000, "list files");
    await within(client.prompt(sessionId, "run outside echo schema-check"), 60_000, "run");
    await within(client.prompt(sessionId, "write x.txt: hi"), 60_000, "write");
    const cancelled = client.prompt(sessionId, "run touch y.txt");
    await within(asked.promise, 60_000, "third approval");
    await client.cancel(sessionId);
    assert.equal((await within(cancelled, 10_000, "cancelled prompt")).stopReason, "cancelled");
    await client.setMode(sessionId, "read-only");
    await client.setConfigOption(sessionId, "approval_policy", "on-request");
    await client.listSessions({ cwd: env.workspace });
    await client.closeSession(sessionId);
    await client.loadSession({ sessionId, cwd: env.workspace });
    await client.closeSession(sessionId);
    await client.resumeSession({ sessionId, cwd: env.workspace });
    await assert.rejects(client.newSession({ cwd: env.workspace, meta: { provider: "nope" } }));
  } finally {
    await within(client.shutdown(), 15_000, "shutdown");
  }

  // pair responses with the method of their request, per direction of the request
  const methodOf = new Map<string, string>();
  for (const { direction, message } of recorded) {
    if (typeof message.method === "string" && message.id !== undefined) {
      methodOf.set(`${direction}:${JSON.stringify(message.id)}`, message.method);
    }
  }
  const problems: string[] = [];
  const checked = new Map<string, number>();
  const validate = (def: string, value: unknown, where: string): void => {
    const check = ajv.getSchema(`cody#/$defs/${def}`);
    assert.ok(check, `no $defs/${def} in the schema`);
    if (!check(value)) problems.push(`${where} vs ${def}: ${ajv.errorsText(check.errors)}\n  ${JSON.stringify(value).slice(0, 300)}`);
    checked.set(def, (checked.get(def) ?? 0) + 1);
  };
  for (const { direction, message } of recorded) {
    if (typeof message.method === "string") {
      const def = PARAMS[message.method];
      if (def) validate(def, message.params, `${direction} ${message.method}`);
      else assert.ok(UNCHECKED.has(message.method) || UNCHECKED.has(`${message.method} params`), `unexpected method ${message.method}`);
      continue;
    }
    const requester = direction === "send" ? "receive" : "send";
    const method = methodOf.get(`${requester}:${JSON.stringify(message.id)}`);
    assert.ok(method, `a response to an unknown request: ${JSON.stringify(message)}`);
    if (message.error !== undefined) {
      validate("RpcError", message.error, `${direction} error for ${method}`);
      continue;
    }
    const def = RESULTS[method];
    if (def) validate(def, message.result, `${direction} result of ${method}`);
    else assert.ok(UNCHECKED.has(`${method} result`), `no schema for the result of ${method}`);
  }
  assert.deepEqual(problems, []);
  const expected = [...new Set([...Object.values(PARAMS), ...Object.values(RESULTS), "RpcError"])].sort();
  assert.deepEqual([...checked.keys()].sort(), expected, "every mapped definition was exercised");
});
