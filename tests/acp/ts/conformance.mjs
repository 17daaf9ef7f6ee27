// ACP conformance check: drives the real Cody daemon with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, pinned in package.json) over stdio with newline-delimited JSON.
//
// Usage:  node conformance.mjs            (from tests/acp/ts, after `npm ci`)
// Env:    CODY_DAEMON_PYTHON  the Python that runs `-m cody_daemon` (default: <repo>/.venv/bin/python)
//         CODY_ACP_VERBOSE=1  print every JSON-RPC frame as it goes by
//         CODY_TEST_BACKEND_ENV  JSON env for a daemon that runs codex/claude sessions against mock
//                             models (set by tests/e2e/test_acp_ts_sdk.py); without it the
//                             backend flows are skipped and say so
//
// Every flow is asserted; the first failure prints what was expected, what Cody sent, the
// last frames of the transcript and the daemon's stderr, and exits 1. Every `session/update`,
// `session/request_permission` and every response Cody sends is also validated against the
// SDK's own JSON Schema (schema/v1/schema.json), on top of the SDK's zod parsing.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

// The unstable entry point: stable ACP v1 plus the features Zed already uses (session/fork,
// usage in the prompt result). Every message is still checked against the stable schema.
import { client, methods, ndJsonStream, PROTOCOL_VERSION, RequestError } from "@agentclientprotocol/sdk/unstable";

const require = createRequire(import.meta.url);
const Ajv2020 = require("ajv/dist/2020").default;

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, "..", "..", "..");
const PYTHON = process.env.CODY_DAEMON_PYTHON || join(REPO, ".venv", "bin", "python");
const VERBOSE = process.env.CODY_ACP_VERBOSE === "1";
const STEP_TIMEOUT_MS = 30_000;

// -- schema validation (the SDK's own schema file) --------------------------------------------

const SCHEMA_PATH = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json");
const SDK_DIR = resolve(dirname(SCHEMA_PATH), "..", "..");
const SDK_VERSION = JSON.parse(readFileSync(join(SDK_DIR, "package.json"), "utf8")).version;
const ajv = new Ajv2020({ strict: false, allErrors: true, discriminator: true });
const INT_RANGES = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint16: [0, 2 ** 16 - 1],
  uint32: [0, 2 ** 32 - 1],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};
for (const [name, [lo, hi]] of Object.entries(INT_RANGES)) {
  ajv.addFormat(name, { type: "number", validate: (n) => Number.isInteger(n) && n >= lo && n <= hi });
}
ajv.addFormat("double", { type: "number", validate: (n) => Number.isFinite(n) });
ajv.addFormat("uri", { type: "string", validate: (s) => /^[A-Za-z][A-Za-z0-9+.-]*:/.test(s) });
ajv.addSchema(JSON.parse(readFileSync(SCHEMA_PATH, "utf8")), "acp");
// The same package's schema with the unstable features: `session/fork` and
// `PromptResponse.usage` are checked against it too.
const UNSTABLE_SCHEMA_PATH = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.unstable.json");
ajv.addSchema(JSON.parse(readFileSync(UNSTABLE_SCHEMA_PATH, "utf8")), "acp-unstable");

function schemaErrors(definition, instance, schema = "acp") {
  const validate = ajv.getSchema(`${schema}#/$defs/${definition}`);
  if (!validate) throw new Error(`${schema} has no $defs/${definition}`);
  if (validate(instance)) return [];
  // oneOf unions report every branch; show the most specific (deepest) problems first.
  const errors = [...validate.errors].sort((a, b) => b.instancePath.length - a.instancePath.length);
  return errors.slice(0, 6).map((e) => `${e.instancePath || "/"} ${e.message} (schema ${e.schemaPath})`);
}

const RESPONSE_DEFS = {
  [methods.agent.initialize]: "InitializeResponse",
  [methods.agent.session.new]: "NewSessionResponse",
  [methods.agent.session.load]: "LoadSessionResponse",
  [methods.agent.session.list]: "ListSessionsResponse",
  [methods.agent.session.resume]: "ResumeSessionResponse",
  [methods.agent.session.close]: "CloseSessionResponse",
  [methods.agent.session.prompt]: "PromptResponse",
  [methods.agent.session.setMode]: "SetSessionModeResponse",
  [methods.agent.session.setConfigOption]: "SetSessionConfigOptionResponse",
  [methods.agent.logout]: "LogoutResponse",
};

/** Responses also checked against the unstable schema (they carry unstable fields). */
const UNSTABLE_RESPONSE_DEFS = {
  [methods.agent.initialize]: "InitializeResponse",
  [methods.agent.session.prompt]: "PromptResponse",
  [methods.agent.session.fork]: "ForkSessionResponse",
};

// -- assertions ---------------------------------------------------------------------------------

class ConformanceError extends Error {}

// The SDK reports handler and parse failures with console.error: tag them so they stand out.
const reportError = console.error.bind(console);
console.error = (...args) => reportError("[sdk console.error]", ...args);

function check(condition, message, detail) {
  if (!condition) {
    const extra = detail === undefined ? "" : `\n  got: ${short(detail, 1500)}`;
    throw new ConformanceError(`${message}${extra}`);
  }
}

function short(value, max = 400) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new ConformanceError(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const textOf = (content) => (content && content.type === "text" ? content.text : "");

function toolText(update) {
  const parts = [];
  for (const item of update.content ?? []) {
    if (item.type === "content") parts.push(textOf(item.content));
    if (item.type === "diff") parts.push(item.newText ?? "");
  }
  if (update.rawOutput !== undefined) parts.push(JSON.stringify(update.rawOutput));
  return parts.join("\n");
}

// -- a temp environment like a user's machine, with no provider keys ----------------------------

function makeEnv() {
  const root = mkdtempSync(join(tmpdir(), "cody-acp-ts-"));
  const dirs = {};
  for (const name of ["home", "cody-home", "codex-home", "claude-config", "workspace", "tmp"]) {
    dirs[name] = join(root, name);
    mkdirSync(dirs[name]);
  }
  writeFileSync(join(dirs.workspace, "hello.txt"), "hello from the ACP conformance check\n");
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    LANG: "C.UTF-8",
    HOME: dirs.home,
    CODY_HOME: dirs["cody-home"],
    CODEX_HOME: dirs["codex-home"],
    CLAUDE_CONFIG_DIR: dirs["claude-config"],
    TMPDIR: dirs.tmp,
  };
  for (const name of ["CODY_BWRAP", "VIRTUAL_ENV", "PYTHONPATH"]) {
    if (process.env[name]) env[name] = process.env[name];
  }
  return { root, dirs, env, workspace: dirs.workspace };
}

// -- one daemon process, one SDK client connection ----------------------------------------------

class DaemonSession {
  /** `options.clientCapabilities`: what `initialize` declares; with `fs`, the fs/* requests
   * are answered from disk, as Zed answers them from its buffers. */
  constructor(env, label, options = {}) {
    this.label = label;
    this.transcript = []; // [{dir, msg}] in wire order
    this.stderr = "";
    this.problems = []; // schema / SDK validation problems
    this.outgoing = new Map(); // our request id -> method
    this.rawUpdates = 0;
    this.handledUpdates = 0;
    this.updates = []; // {seq, sessionId, update} as the SDK handler saw them
    this.seq = 0;
    this.permissionHandlers = new Map(); // sessionId -> async (ctx) => response
    this.permissionRequests = [];
    this.editor = null; // {buffers: Map(path -> text), reads: [], writes: []} for a Zed-like client
    if (options.fs) {
      this.editor = { buffers: new Map(), reads: [], writes: [] };
      this.fsRequests = [];
    }

    this.child = spawn(PYTHON, ["-m", "cody_daemon"], {
      cwd: env.workspace,
      env: env.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.exited = new Promise((resolveExit) => {
      this.child.on("exit", (code, signal) => resolveExit({ code, signal }));
      this.child.on("error", (error) => {
        this.problems.push(`could not start the daemon: ${error.message}`);
        resolveExit({ code: null, signal: null, error });
      });
    });
    this.child.stderr.on("data", (chunk) => {
      this.stderr += chunk.toString();
      if (this.stderr.length > 100_000) this.stderr = this.stderr.slice(-50_000);
    });

    const base = ndJsonStream(Writable.toWeb(this.child.stdin), Readable.toWeb(this.child.stdout));
    const session = this;
    const readable = base.readable.pipeThrough(
      new TransformStream({
        transform(msg, controller) {
          session.observeIncoming(msg);
          controller.enqueue(msg);
        },
      }),
    );
    const baseWriter = base.writable;
    const writable = new WritableStream({
      async write(msg) {
        session.observeOutgoing(msg);
        const writer = baseWriter.getWriter();
        try {
          await writer.write(msg);
        } finally {
          writer.releaseLock();
        }
      },
    });

    this.app = client({ name: "cody-acp-conformance" })
      .onNotification(methods.client.session.update, ({ params }) => {
        this.handledUpdates += 1;
        this.updates.push({ seq: ++this.seq, sessionId: params.sessionId, update: params.update });
      })
      .onRequest(methods.client.session.requestPermission, async (ctx) => {
        this.permissionRequests.push(ctx.params);
        const handler = this.permissionHandlers.get(ctx.params.sessionId);
        if (!handler) {
          this.problems.push(`unexpected session/request_permission: ${short(ctx.params)}`);
          return { outcome: { outcome: "cancelled" } };
        }
        return handler(ctx);
      })
      .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
        if (!this.editor) {
          this.problems.push(`fs/read_text_file from a client that did not declare fs: ${short(params)}`);
          throw RequestError.methodNotFound(methods.client.fs.readTextFile);
        }
        this.editor.reads.push(params.path);
        this.fsRequests?.push({ method: "read", params });
        if (this.editor.buffers.has(params.path)) return { content: this.editor.buffers.get(params.path) };
        if (!existsSync(params.path)) throw RequestError.resourceNotFound(params.path);
        return { content: readFileSync(params.path, "utf8") };
      })
      .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
        if (!this.editor) {
          this.problems.push(`fs/write_text_file from a client that did not declare fs: ${short(params)}`);
          throw RequestError.methodNotFound(methods.client.fs.writeTextFile);
        }
        this.editor.writes.push({ path: params.path, content: params.content });
        this.fsRequests?.push({ method: "write", params });
        this.editor.buffers.set(params.path, params.content);
        mkdirSync(dirname(params.path), { recursive: true });
        writeFileSync(params.path, params.content); // the editor saves the buffer
        return {};
      });
    this.connection = this.app.connect({ readable, writable });
    this.agent = this.connection.agent;
  }

  observeOutgoing(msg) {
    this.transcript.push({ dir: "->", msg });
    if (VERBOSE) console.log(`[${this.label}] -> ${short(msg, 2000)}`);
    if ("method" in msg && "id" in msg) this.outgoing.set(msg.id, msg.method);
  }

  observeIncoming(msg) {
    this.transcript.push({ dir: "<-", msg });
    if (VERBOSE) console.log(`[${this.label}] <- ${short(msg, 2000)}`);
    const where = `${this.label} frame #${this.transcript.length}`;
    const invalid = (definition, what, instance, schema = "acp") => {
      const errors = schemaErrors(definition, instance, schema);
      if (errors.length) {
        const file = schema === "acp" ? "schema.json" : "schema.unstable.json";
        this.problems.push(`${where}: ${what} fails $defs/${definition} of ${file}:\n      ${errors.join("\n      ")}\n    message: ${short(instance, 800)}`);
      }
    };
    if (msg.method === methods.client.session.update) {
      this.rawUpdates += 1;
      invalid("SessionNotification", `session/update (${msg.params?.update?.sessionUpdate})`, msg.params);
    } else if (msg.method === methods.client.session.requestPermission) {
      invalid("RequestPermissionRequest", "session/request_permission params", msg.params);
    } else if (msg.method === methods.client.fs.readTextFile) {
      invalid("ReadTextFileRequest", "fs/read_text_file params", msg.params);
    } else if (msg.method === methods.client.fs.writeTextFile) {
      invalid("WriteTextFileRequest", "fs/write_text_file params", msg.params);
    } else if (typeof msg.method === "string" && msg.method.startsWith("terminal/")) {
      this.problems.push(`${where}: Cody asked the client to run a command (${msg.method}); commands must run in Cody's sandbox`);
    } else if (msg.method === methods.protocol.cancelRequest) {
      invalid("CancelRequestNotification", "$/cancel_request params", msg.params);
    } else if (!("method" in msg) && "id" in msg && "result" in msg) {
      const method = this.outgoing.get(msg.id);
      if (RESPONSE_DEFS[method]) invalid(RESPONSE_DEFS[method], `${method} result`, msg.result);
      const unstable = UNSTABLE_RESPONSE_DEFS[method];
      if (unstable) invalid(unstable, `${method} result`, msg.result, "acp-unstable");
    }
  }

  /** Raises if any frame so far failed schema validation or was dropped by the SDK's zod parser. */
  assertClean(step) {
    check(this.problems.length === 0, `${step}: invalid messages from Cody:\n  - ${this.problems.join("\n  - ")}`);
    check(
      this.rawUpdates === this.handledUpdates,
      `${step}: the SDK rejected ${this.rawUpdates - this.handledUpdates} of ${this.rawUpdates} session/update notifications (its zod schema did not parse them; see "Error handling notification" above)`,
    );
  }

  updatesFor(sessionId, fromSeq = 0) {
    return this.updates.filter((u) => u.sessionId === sessionId && u.seq > fromSeq);
  }

  async close() {
    this.connection.close();
    try {
      this.child.stdin.end();
    } catch {
      // already closed
    }
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }

  tail(lines = 25) {
    const frames = this.transcript.slice(-lines).map(({ dir, msg }) => `  ${dir} ${short(msg, 600)}`);
    const err = this.stderr.trim().split("\n").slice(-20).map((l) => `  ${l}`);
    return `last frames on ${this.label}:\n${frames.join("\n")}\ndaemon stderr (tail):\n${err.join("\n")}`;
  }
}

// -- helpers over an ActiveSession --------------------------------------------------------------

/** Sends a prompt and reads the SDK's ActiveSession queue until its `stop` message. */
async function runTurn(daemon, active, text) {
  const startSeq = daemon.seq;
  const messages = [];
  let seenAtResolve = -1;
  const prompt = active.prompt(text).then((response) => {
    seenAtResolve = daemon
      .updatesFor(active.sessionId, startSeq)
      .filter((u) => u.update.sessionUpdate === "agent_message_chunk").length;
    return response;
  });
  for (;;) {
    const message = await withTimeout(active.nextUpdate(), STEP_TIMEOUT_MS, `the turn "${text}" to stop`);
    messages.push(message);
    if (message.kind === "stop") break;
  }
  const response = await prompt;
  const updates = messages.filter((m) => m.kind === "session_update").map((m) => m.update);
  return { response, updates, stop: messages.at(-1), seenAtResolve };
}

function toolCalls(updates) {
  const calls = new Map();
  for (const update of updates) {
    if (update.sessionUpdate === "tool_call") {
      calls.set(update.toolCallId, { start: update, updates: [update], final: update });
    } else if (update.sessionUpdate === "tool_call_update") {
      const call = calls.get(update.toolCallId);
      check(call, `tool_call_update for ${update.toolCallId} arrived before its tool_call`, update);
      call.updates.push(update);
      if (update.status) call.final = { ...call.final, ...update };
    }
  }
  return calls;
}

/** Polls `predicate` until it holds (a notification sent right after a response). */
async function waitFor(predicate, what, ms = 5_000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new ConformanceError(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Lets notification handlers that started before a response finish (they run on microtasks). */
const settle = () => new Promise((resolveSettle) => setImmediate(resolveSettle));

function waitAbort(signal, ms) {
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((resolveAbort) => {
    const timer = setTimeout(() => resolveAbort(false), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolveAbort(true);
    }, { once: true });
  });
}

// -- the flows ----------------------------------------------------------------------------------

const results = [];

async function step(name, daemon, fn) {
  try {
    const value = await withTimeout(Promise.resolve().then(fn), STEP_TIMEOUT_MS * 2, name);
    daemon.assertClean(name);
    results.push(name);
    console.log(`ok ${results.length} - ${name}`);
    return value;
  } catch (error) {
    const message = error instanceof ConformanceError ? error.message : error?.stack ?? String(error);
    const rpc = error instanceof RequestError ? ` (JSON-RPC error ${error.code}: ${short(error.data)})` : "";
    const invalid = daemon.problems.length && !message.includes("invalid messages from Cody")
      ? `\n\ninvalid messages and other problems seen so far:\n  - ${daemon.problems.join("\n  - ")}`
      : "";
    console.log(`not ok ${results.length + 1} - ${name}`);
    console.log(`\nFAIL [${name}]: ${message}${rpc}${invalid}\n\n${daemon.tail()}\n`);
    console.log(`conformance: ${results.length} passed, 1 failed`);
    await daemon.close().catch(() => {});
    process.exit(1);
  }
}

async function main() {
  console.log(`ACP conformance: @agentclientprotocol/sdk ${SDK_VERSION} client -> ${PYTHON} -m cody_daemon (ndjson)`);
  const env = makeEnv();
  const first = new DaemonSession(env, "daemon#1");
  const agent = first.agent;
  const ids = {};

  await step("initialize", first, async () => {
    const init = await agent.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "cody-acp-conformance", title: "ACP TS SDK conformance", version: SDK_VERSION },
    });
    check(init.protocolVersion === 1, "initialize: protocolVersion must be 1", init.protocolVersion);
    const caps = init.agentCapabilities ?? {};
    check(caps.loadSession === true, "initialize: agentCapabilities.loadSession must be true", caps);
    for (const cap of ["list", "resume", "close"]) {
      const value = caps.sessionCapabilities?.[cap];
      check(value !== null && typeof value === "object", `initialize: agentCapabilities.sessionCapabilities.${cap} must be an object`, caps.sessionCapabilities);
    }
    check(init.agentInfo?.name === "cody", "initialize: agentInfo.name must be \"cody\"", init.agentInfo);
    check(Array.isArray(init.authMethods), "initialize: authMethods must be a list", init.authMethods);
  });

  const mainSession = await step("session/new in a temp workspace", first, async () => {
    const active = await first.agent.buildSession(env.workspace).start();
    check(typeof active.sessionId === "string" && active.sessionId.length > 0, "session/new: sessionId", active.newSessionResponse);
    const modes = active.modes;
    check(modes && Array.isArray(modes.availableModes) && modes.availableModes.length > 0, "session/new: modes.availableModes", modes);
    check(Array.isArray(active.newSessionResponse.configOptions), "session/new: configOptions must be a list", active.newSessionResponse);
    ids.main = active.sessionId;
    return active;
  });

  await step("session/prompt \"list files\" streams updates", first, async () => {
    const turn = await runTurn(first, mainSession, "list files");
    check(turn.response.stopReason === "end_turn", "list files: stopReason must be end_turn", turn.response);
    const chunks = turn.updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
    check(chunks.length > 0, "list files: no agent_message_chunk arrived", turn.updates.map((u) => u.sessionUpdate));
    check(chunks.every((c) => c.content.type === "text"), "list files: agent_message_chunk content must be text", chunks);
    check(turn.seenAtResolve > 0, "list files: no agent_message_chunk reached the SDK's session/update handler before the prompt resolved");
    // Wire order: the first agent_message_chunk frame precedes the session/prompt response frame.
    const frames = first.transcript.map((f) => f.msg);
    const promptId = [...first.outgoing].filter(([, m]) => m === methods.agent.session.prompt).at(-1)[0];
    const responseAt = frames.findIndex((m) => m.id === promptId && !("method" in m));
    const chunkAt = frames.findIndex((m) => m.method === methods.client.session.update && m.params.sessionId === ids.main && m.params.update.sessionUpdate === "agent_message_chunk");
    check(chunkAt >= 0 && chunkAt < responseAt, "list files: agent_message_chunk must be sent before the session/prompt response", { chunkAt, responseAt });
    const calls = [...toolCalls(turn.updates).values()];
    check(calls.length === 1, "list files: exactly one tool_call expected", turn.updates);
    const [call] = calls;
    check(call.start.status === "pending", "list files: tool_call must start pending", call.start);
    check(call.final.status === "completed", "list files: the tool call must reach completed", call.updates);
    check(toolText(call.final).includes("hello.txt"), "list files: the listing must name hello.txt", call.final);
    const text = chunks.map((c) => c.content.text).join("");
    check(text.includes("hello.txt"), "list files: the answer must mention hello.txt", text);
    ids.listCall = call.start.toolCallId;
  });

  await step("permission round trip answered allow_once", first, async () => {
    let seen;
    first.permissionHandlers.set(ids.main, async ({ params }) => {
      seen = params;
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    });
    // The default policy runs a sandboxed command unasked; this one asks to leave the sandbox.
    const turn = await runTurn(first, mainSession, "run outside echo acp-allowed");
    check(seen, "allow_once: no session/request_permission arrived");
    const byId = Object.fromEntries(seen.options.map((o) => [o.optionId, o.kind]));
    const expected = { allow_once: "allow_once", allow_always: "allow_always", allow_project: "allow_always", reject_once: "reject_once", reject_always: "reject_always" };
    check(JSON.stringify(byId) === JSON.stringify(expected), "allow_once: the five options with their kinds", seen.options);
    check(seen.toolCall.kind === "execute", "allow_once: toolCall.kind must be execute", seen.toolCall);
    check(toolText(seen.toolCall).includes("echo acp-allowed") || JSON.stringify(seen.toolCall.rawInput ?? {}).includes("echo acp-allowed"), "allow_once: the request must show the command", seen.toolCall);
    const calls = toolCalls(turn.updates);
    const call = calls.get(seen.toolCall.toolCallId);
    check(call, "allow_once: the permission's toolCallId must match a tool_call update", { permission: seen.toolCall.toolCallId, calls: [...calls.keys()] });
    check(call.final.status === "completed", "allow_once: the tool call must reach completed", call.updates);
    check(toolText(call.final).includes("acp-allowed"), "allow_once: the command output must reach the tool call", call.final);
    check(turn.response.stopReason === "end_turn", "allow_once: stopReason must be end_turn", turn.response);
    ids.execCall = call.start.toolCallId;
  });

  await step("permission round trip answered reject_once", first, async () => {
    const target = join(env.workspace, "..", "x.txt");
    let seen;
    let existedDuringApproval = false;
    first.permissionHandlers.set(ids.main, async ({ params }) => {
      seen = params;
      existedDuringApproval = existsSync(target);
      return { outcome: { outcome: "selected", optionId: "reject_once" } };
    });
    const turn = await runTurn(first, mainSession, "write ../x.txt: hi"); // outside the workspace: it asks
    check(seen, "reject_once: no session/request_permission arrived");
    check(seen.toolCall.kind === "edit", "reject_once: toolCall.kind must be edit", seen.toolCall);
    const diff = (seen.toolCall.content ?? []).find((c) => c.type === "diff");
    check(diff && diff.path.endsWith("x.txt") && diff.newText === "hi", "reject_once: the request must carry the diff", seen.toolCall.content);
    check(!existedDuringApproval, "reject_once: x.txt existed before the answer");
    check(!existsSync(target), "reject_once: x.txt must never be written");
    const call = toolCalls(turn.updates).get(seen.toolCall.toolCallId);
    check(call && call.final.status === "failed", "reject_once: the tool call must end failed", call?.updates);
    check(turn.response.stopReason === "end_turn", "reject_once: the turn must go on and end with end_turn", turn.response);
    const failedAt = turn.updates.findIndex((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed");
    const after = turn.updates.slice(failedAt + 1).filter((u) => u.sessionUpdate === "agent_message_chunk");
    check(after.length > 0, "reject_once: the model must answer after the rejection (the turn goes on)", turn.updates.map((u) => u.sessionUpdate));
    ids.writeCall = call.start.toolCallId;
  });

  await step("session/cancel while an approval is pending", first, async () => {
    const active = await first.agent.buildSession(env.workspace).start();
    ids.cancel = active.sessionId;
    const target = join(env.workspace, "acp-cancelled.txt");
    let handlerSawAbort = null;
    let abortReason;
    let permissionArrived;
    const arrived = new Promise((r) => (permissionArrived = r));
    first.permissionHandlers.set(ids.cancel, async ({ params, signal }) => {
      permissionArrived(params);
      handlerSawAbort = await waitAbort(signal, 10_000);
      abortReason = signal.reason;
      // ACP: after session/cancel the client answers pending permission requests `cancelled`.
      return { outcome: { outcome: "cancelled" } };
    });
    const turnPromise = runTurn(first, active, "run outside touch acp-cancelled.txt");
    const params = await withTimeout(arrived, STEP_TIMEOUT_MS, "session/request_permission for the cancel flow");
    await first.agent.notify(methods.agent.session.cancel, { sessionId: ids.cancel });
    const turn = await turnPromise;
    check(handlerSawAbort === true, "cancel: the SDK's request handler did not see the cancellation (no $/cancel_request for the pending session/request_permission within 10 s)");
    check(abortReason instanceof RequestError && abortReason.code === -32800, "cancel: the abort reason must be the SDK's RequestCancelled (-32800)", abortReason);
    check(turn.response.stopReason === "cancelled", "cancel: the prompt must resolve with stopReason cancelled", turn.response);
    const call = toolCalls(turn.updates).get(params.toolCall.toolCallId);
    check(call && call.final.status === "failed", "cancel: the pending tool call must end failed", call?.updates);
    check(!existsSync(target), "cancel: the command must not have run");
    active.dispose();
  });

  await step("daemon exits cleanly on stdin EOF", first, async () => {
    mainSession.dispose();
    const { code, signal } = await first.close();
    check(code === 0, "daemon#1 must exit 0 after stdin EOF", { code, signal });
  });

  const second = new DaemonSession(env, "daemon#2");
  await step("session/load replays the history (fresh daemon)", second, async () => {
    const init = await second.agent.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: {},
      clientInfo: { name: "cody-acp-conformance", version: SDK_VERSION },
    });
    check(init.agentCapabilities?.loadSession === true, "load: loadSession capability", init.agentCapabilities);
    const listed = await second.agent.request(methods.agent.session.list, { cwd: env.workspace });
    check(listed.sessions.some((s) => s.sessionId === ids.main && s.cwd === env.workspace), "session/list must include the first session with its cwd", listed);
    const startSeq = second.seq;
    const loaded = await second.agent.request(methods.agent.session.load, { sessionId: ids.main, cwd: env.workspace, mcpServers: [] });
    check(loaded && typeof loaded === "object", "session/load must answer an object", loaded);
    await settle();
    const updates = second.updatesFor(ids.main, startSeq).map((u) => u.update);
    const kinds = updates.map((u) => u.sessionUpdate);
    const userTexts = updates.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => textOf(u.content));
    check(JSON.stringify(userTexts) === JSON.stringify(["list files", "run outside echo acp-allowed", "write ../x.txt: hi"]), "load: user_message_chunk replay of the three prompts, in order", userTexts);
    check(kinds.includes("agent_message_chunk"), "load: agent_message_chunk must be replayed", kinds);
    const replayed = new Map(updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => [u.toolCallId, u]));
    check(replayed.get(ids.listCall)?.status === "completed", "load: the listDir tool_call is replayed completed", replayed.get(ids.listCall));
    check(replayed.get(ids.execCall)?.status === "completed", "load: the exec tool_call is replayed completed", replayed.get(ids.execCall));
    check(toolText(replayed.get(ids.execCall)).includes("acp-allowed"), "load: the exec tool_call carries its output", replayed.get(ids.execCall));
    check(replayed.get(ids.writeCall)?.status === "failed", "load: the rejected writeFile tool_call is replayed failed", replayed.get(ids.writeCall));
    // Wire order: all replayed updates precede the session/load response.
    const frames = second.transcript.map((f) => f.msg);
    const loadId = [...second.outgoing].find(([, m]) => m === methods.agent.session.load)[0];
    const responseAt = frames.findIndex((m) => m.id === loadId && !("method" in m));
    const isUpdate = (m) => m.method === methods.client.session.update && m.params.sessionId === ids.main;
    const lastReplay = frames.findLastIndex((m) => isUpdate(m) && m.params.update.sessionUpdate !== "available_commands_update");
    check(lastReplay < responseAt, "load: replayed updates must come before the session/load response", { lastReplay, responseAt });
    // The session's slash commands are advertised after the response (as after session/new).
    await waitFor(() => second.transcript.some((f) => isUpdate(f.msg) && f.msg.params.update.sessionUpdate === "available_commands_update"), "available_commands_update after session/load");
    const commandsAt = second.transcript.map((f) => f.msg).findLastIndex((m) => isUpdate(m) && m.params.update.sessionUpdate === "available_commands_update");
    check(commandsAt > responseAt, "load: available_commands_update must follow the session/load response", { commandsAt, responseAt });
  });

  await step("session/set_mode, session/set_config_option, session/close", second, async () => {
    const startSeq = second.seq;
    const modeResult = await second.agent.request(methods.agent.session.setMode, { sessionId: ids.main, modeId: "read-only" });
    check(modeResult && Object.keys(modeResult).length === 0, "set_mode must answer {}", modeResult);
    await settle();
    const modeUpdates = second.updatesFor(ids.main, startSeq).map((u) => u.update);
    check(modeUpdates.some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "read-only"), "set_mode must be followed by current_mode_update read-only", modeUpdates.map((u) => u.sessionUpdate));
    check(modeUpdates.some((u) => u.sessionUpdate === "config_option_update"), "set_mode must be followed by a config_option_update", modeUpdates.map((u) => u.sessionUpdate));
    const configResult = await second.agent.request(methods.agent.session.setConfigOption, { sessionId: ids.main, configId: "approval_policy", value: "on-request" });
    const policy = configResult.configOptions.find((o) => o.id === "approval_policy");
    check(policy && policy.currentValue === "on-request", "set_config_option must answer every option, with the new value", configResult.configOptions);
    const closed = await second.agent.request(methods.agent.session.close, { sessionId: ids.main });
    check(closed && typeof closed === "object", "session/close must answer an object", closed);
  });

  await step("daemon#2 exits cleanly", second, async () => {
    const { code, signal } = await second.close();
    check(code === 0, "daemon#2 must exit 0 after stdin EOF", { code, signal });
  });

  const third = await zedLikeFlows(env);
  const fourth = await imageFlows(env);
  const zedUpdates = await zedFlows();

  let validated = first.rawUpdates + second.rawUpdates + third.rawUpdates + fourth.rawUpdates + zedUpdates;
  if (process.env.CODY_TEST_BACKEND_ENV) {
    const fifth = new DaemonSession({ ...env, env: { ...env.env, ...JSON.parse(process.env.CODY_TEST_BACKEND_ENV) } }, "daemon#5");
    await step("initialize (a daemon with the Codex CLI and Claude Code)", fifth, async () => {
      await fifth.agent.request(methods.agent.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: {},
        clientInfo: { name: "cody-acp-conformance", version: SDK_VERSION },
      });
    });
    for (const backend of ["codex", "claude"]) {
      await step(`a turn on the ${backend} backend, its approval answered here`, fifth, async () => {
        const created = await fifth.agent.request(methods.agent.session.new, {
          cwd: env.workspace,
          mcpServers: [],
          _meta: { cody: { backend, sandboxMode: "danger-full-access" } },
        });
        const sessionId = created.sessionId;
        check(created._meta?.cody?.backend === backend, `${backend}: session/new must report the backend`, created._meta);
        let seen;
        fifth.permissionHandlers.set(sessionId, async ({ params }) => {
          seen = params;
          return { outcome: { outcome: "selected", optionId: "allow_once" } };
        });
        const startSeq = fifth.seq;
        const response = await withTimeout(
          fifth.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: `touch acp-${backend}.txt` }] }),
          STEP_TIMEOUT_MS * 2,
          `the ${backend} turn`,
        );
        await settle();
        check(response.stopReason === "end_turn", `${backend}: stopReason must be end_turn`, response);
        check(seen && seen.toolCall.kind === "execute", `${backend}: the CLI's approval must reach the client`, seen);
        check(existsSync(join(env.workspace, `acp-${backend}.txt`)), `${backend}: the approved command must have run`);
        const updates = fifth.updatesFor(sessionId, startSeq).map((u) => u.update);
        const call = toolCalls(updates).get(seen.toolCall.toolCallId);
        check(call && call.final.status === "completed", `${backend}: the tool call must reach completed`, call?.updates);
        const text = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => textOf(u.content)).join("");
        check(text.includes(`done on ${backend}`), `${backend}: the agent's answer must stream`, text);
      });
    }
    await step("daemon#5 exits cleanly", fifth, async () => {
      const { code, signal } = await fifth.close();
      check(code === 0, "daemon#5 must exit 0 after stdin EOF", { code, signal });
    });
    validated += fifth.rawUpdates;
  } else {
    console.log("skipped: the codex/claude backend flows (CODY_TEST_BACKEND_ENV is not set)");
  }
  console.log(`validated ${validated} session/update notifications against ${SCHEMA_PATH.replace(HERE + "/", "")}`);
  console.log(`conformance: ${results.length} passed, 0 failed`);
  rmSync(env.root, { recursive: true, force: true });
}

// -- a client that declares what Zed declares (issue 13: slash commands, fs, terminal, images) --

const ZED_CAPABILITIES = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  _meta: { terminal_output: true, "terminal-auth": true },
};
const COMMANDS = ["compact", "model", "approvals", "fork", "history", "init", "review"];

async function zedLikeFlows(env) {
  const zed = new DaemonSession(env, "daemon#3 (Zed-like)");
  zed.editor = { buffers: new Map(), reads: [], writes: [] };
  let active;

  await step("Zed-like initialize: image only when a configured model takes images", zed, async () => {
    const init = await zed.agent.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: ZED_CAPABILITIES,
      clientInfo: { name: "zed", version: "0.0.0-conformance" },
    });
    const prompt = init.agentCapabilities?.promptCapabilities ?? {};
    check(prompt.image === false, "initialize: only the text-only offline model is usable here, so promptCapabilities.image must be false", prompt);
  });

  await step("available_commands_update follows the session/new response", zed, async () => {
    active = await zed.agent.buildSession(env.workspace).start();
    const sid = active.sessionId;
    await waitFor(() => zed.updatesFor(sid).some((u) => u.update.sessionUpdate === "available_commands_update"), "available_commands_update after session/new");
    const update = zed.updatesFor(sid).find((u) => u.update.sessionUpdate === "available_commands_update");
    check(update, "session/new: no available_commands_update arrived");
    const names = update.update.availableCommands.map((c) => c.name);
    check(JSON.stringify(names) === JSON.stringify(COMMANDS), "the advertised commands", names);
    const frames = zed.transcript.map((f) => f.msg);
    const responseAt = frames.findIndex((m) => m.result?.sessionId === sid);
    const updateAt = frames.findIndex((m) => m.params?.update?.sessionUpdate === "available_commands_update");
    check(responseAt >= 0 && responseAt < updateAt, "the update must come after the response that names the session", { responseAt, updateAt });
  });

  await step("slash commands run by the daemon: /model and /approvals; /foo goes to the model", zed, async () => {
    const listing = await runTurn(zed, active, "/model");
    const text = listing.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => textOf(u.content)).join("");
    check(listing.response.stopReason === "end_turn" && text.includes("Model: offline/offline"), "/model lists the models", text);
    const mode = await runTurn(zed, active, "/approvals read-only");
    check(mode.updates.some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "read-only"), "/approvals read-only switches the mode", mode.updates.map((u) => u.sessionUpdate));
    await runTurn(zed, active, "/approvals auto");
    const other = await runTurn(zed, active, "/nothing to see");
    const answer = other.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => textOf(u.content)).join("");
    check(answer.includes("offline model"), "an unknown /word goes to the model as text", answer);
  });

  await step("file tools read the unsaved buffer and write through fs/write_text_file", zed, async () => {
    const notes = join(env.workspace, "notes.txt");
    writeFileSync(notes, "saved on disk\n");
    zed.editor.buffers.set(notes, "unsaved in the editor\n");
    const read = await runTurn(zed, active, "read notes.txt");
    const readCall = [...toolCalls(read.updates).values()][0];
    check(toolText(readCall.final).includes("unsaved in the editor"), "readFile must see the editor's buffer", readCall.final);
    check(zed.editor.reads.includes(notes), "fs/read_text_file must name the absolute path", zed.editor.reads);
    let permission;
    zed.permissionHandlers.set(active.sessionId, async ({ params }) => {
      permission = params;
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    });
    // The `ask` mode: an edit in the workspace asks (the default runs it in the sandbox).
    await zed.agent.request(methods.agent.session.setMode, { sessionId: active.sessionId, modeId: "ask" });
    const written = await runTurn(zed, active, "write out.txt: from the editor");
    await zed.agent.request(methods.agent.session.setMode, { sessionId: active.sessionId, modeId: "auto" });
    const diff = (permission?.toolCall?.content ?? []).find((c) => c.type === "diff");
    check(diff && diff.newText === "from the editor", "the approval carries the diff", permission);
    const target = join(env.workspace, "out.txt");
    check(zed.editor.writes.some((w) => w.path === target && w.content === "from the editor"), "writeFile must go through fs/write_text_file", zed.editor.writes);
    check(readFileSync(target, "utf8") === "from the editor", "the editor saved the file");
    const writeCall = [...toolCalls(written.updates).values()][0];
    check(writeCall.final.status === "completed", "the write completes", writeCall.updates);
  });

  await step("a command's output streams into a display-only terminal (never terminal/create)", zed, async () => {
    const turn = await runTurn(zed, active, "run printf 'one\\ntwo\\n'; sleep 0.2; printf 'three\\n'");
    const [call] = [...toolCalls(turn.updates).values()];
    check(call, "run: no tool call", turn.updates);
    const embedded = call.start.content ?? [];
    check(embedded.length === 1 && embedded[0].type === "terminal" && embedded[0].terminalId === call.start.toolCallId, "the tool_call embeds the terminal", call.start);
    check(call.start._meta?.terminal_info?.terminal_id === call.start.toolCallId, "the tool_call carries _meta.terminal_info", call.start._meta);
    const data = call.updates.map((u) => u._meta?.terminal_output?.data).filter((d) => d !== undefined).join("");
    check(data === "one\ntwo\nthree\n", "terminal_output carries each byte once, in order", data);
    const exit = call.updates.at(-1)._meta?.terminal_exit;
    check(exit && exit.exit_code === 0 && exit.terminal_id === call.start.toolCallId, "the final update carries terminal_exit", call.updates.at(-1));
    check(call.final.status === "completed", "the command completes", call.final);
  });

  await step("an image for a text-only model is a clear -32602", zed, async () => {
    let error;
    try {
      await zed.agent.request(methods.agent.session.prompt, {
        sessionId: active.sessionId,
        prompt: [{ type: "text", text: "what is this?" }, { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }],
      });
    } catch (caught) {
      error = caught;
    }
    check(error instanceof RequestError && error.code === -32602, "session/prompt with an image must fail with -32602", error);
    check(String(error.message).includes("offline") && String(error.message).includes("does not accept images"), "the error names the model", error.message);
  });

  await step("daemon#3 exits cleanly", zed, async () => {
    active.dispose();
    const { code, signal } = await zed.close();
    check(code === 0, "daemon#3 must exit 0 after stdin EOF", { code, signal });
  });
  return zed;
}

/** A mock Responses API in a child process (tests/support/serve_mock.py). */
async function startMockModel(answer) {
  const child = spawn(PYTHON, ["-m", "tests.support.serve_mock", "responses", answer], {
    cwd: REPO,
    stdio: ["pipe", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk) => (out += chunk.toString()));
  const exited = new Promise((resolveExit) => child.on("exit", resolveExit));
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while (!out.includes("\n")) {
    if (Date.now() > deadline) throw new ConformanceError(`the mock model did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const baseUrl = out.split("\n")[0].replace(/^READY /, "");
  return {
    baseUrl,
    /** Stops the mock; the JSON bodies of every request it received. */
    async requests() {
      child.stdin.end();
      await exited;
      return JSON.parse(out.split("\n")[1]);
    },
  };
}

async function imageFlows(env) {
  const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
  const mock = await startMockModel("I see one pixel.");
  writeFileSync(
    join(env.dirs["cody-home"], "config.toml"),
    `model_provider = "mock"\n[model_providers.mock]\nname = "Mock"\nbase_url = "${mock.baseUrl}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\ndefault_model = "mock-model"\nrequest_max_retries = 0\nstream_max_retries = 0\n`,
  );
  const withKey = { ...env, env: { ...env.env, MOCK_API_KEY: "test-key-not-secret" } };
  const daemon = new DaemonSession(withKey, "daemon#4 (images)");
  daemon.editor = { buffers: new Map(), reads: [], writes: [] };
  let sessionId;

  await step("image prompts reach the model as input_image and are replayed", daemon, async () => {
    const init = await daemon.agent.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: ZED_CAPABILITIES,
      clientInfo: { name: "zed", version: "0.0.0-conformance" },
    });
    check(init.agentCapabilities?.promptCapabilities?.image === true, "initialize: a model that may take images is configured, so promptCapabilities.image must be true", init.agentCapabilities);
    const active = await daemon.agent.buildSession(env.workspace).start();
    sessionId = active.sessionId;
    const turn = await runTurn(daemon, active, [
      { type: "text", text: "what is in this picture?" },
      { type: "image", data: PIXEL, mimeType: "image/png" },
    ]);
    check(turn.response.stopReason === "end_turn", "the image prompt ends end_turn", turn.response);
    active.dispose();
    await daemon.agent.request(methods.agent.session.close, { sessionId });
    const startSeq = daemon.seq;
    await daemon.agent.request(methods.agent.session.load, { sessionId, cwd: env.workspace, mcpServers: [] });
    await settle();
    const replayed = daemon.updatesFor(sessionId, startSeq).map((u) => u.update).filter((u) => u.sessionUpdate === "user_message_chunk");
    check(replayed.some((u) => u.content.type === "image" && u.content.data === PIXEL && u.content.mimeType === "image/png"), "session/load replays the image", replayed);
  });

  await step("daemon#4 exits cleanly; the model saw the image", daemon, async () => {
    const { code, signal } = await daemon.close();
    check(code === 0, "daemon#4 must exit 0 after stdin EOF", { code, signal });
    const bodies = await mock.requests();
    const parts = bodies.flatMap((b) => b.input ?? []).flatMap((item) => item.content ?? []);
    check(parts.some((p) => p.type === "input_image" && p.image_url === `data:image/png;base64,${PIXEL}`), "the Responses request carries the image as input_image with a data URL", parts);
  });
  return daemon;
}

// -- acting like Zed: fs and terminal declared, the editor features ----------------------------

/** JSON with sorted keys: the SDK's zod parsing may reorder an object's keys. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

const ZED_CLIENT_CAPABILITIES = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };
const ACP_CATEGORIES = ["mode", "model", "model_config", "thought_level"];

/** Frames of `daemon` for `sessionId` after the answer to request `id`: must be none. */
async function assertNothingAfterAnswer(daemon, sessionId, id, what) {
  await new Promise((r) => setTimeout(r, 300)); // late frames need a moment to show up
  const frames = daemon.transcript.filter((f) => f.dir === "<-").map((f) => f.msg);
  const answerAt = frames.findIndex((m) => m.id === id && !("method" in m));
  check(answerAt >= 0, `${what}: no answer to request ${id}`);
  const late = frames.slice(answerAt + 1).filter((m) => m.method === methods.client.session.update && m.params.sessionId === sessionId);
  check(late.length === 0, `${what}: session/update frames arrived after the session/prompt answer`, late);
  const before = frames.slice(0, answerAt).filter((m) => m.method === methods.client.session.update && m.params.sessionId === sessionId);
  const status = new Map();
  for (const m of before) {
    const u = m.params.update;
    if ((u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.status) status.set(u.toolCallId, u.status);
  }
  const open = [...status].filter(([, s]) => s !== "completed" && s !== "failed");
  check(open.length === 0, `${what}: tool calls still open when the prompt was answered`, open);
}

/** The id of the last session/prompt request sent on `daemon`. */
const lastPromptId = (daemon) => [...daemon.outgoing].filter(([, m]) => m === methods.agent.session.prompt).at(-1)[0];

/** One id per message: consecutive chunks of a kind collapsed to their messageId. */
function messageIds(updates, kind) {
  const ids = [];
  for (const u of updates.filter((x) => x.sessionUpdate === kind)) {
    check(typeof u.messageId === "string" && u.messageId.length > 0, `${kind} must carry a messageId`, u);
    if (ids.at(-1) !== u.messageId) ids.push(u.messageId);
  }
  return ids;
}

async function zedFlows() {
  const env = makeEnv();
  const real = realpathSync(env.workspace);
  const zed = new DaemonSession(env, "zed#1", { fs: true });
  const ids = {};
  let active;

  await step("zed: initialize with fs and terminal; fork and logout offered; the first auth method works", zed, async () => {
    const init = await zed.agent.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: ZED_CLIENT_CAPABILITIES,
      clientInfo: { name: "zed", title: "Zed", version: "0.200.0" },
    });
    const caps = init.agentCapabilities ?? {};
    check(canonical(caps.sessionCapabilities?.fork) === "{}", "initialize: sessionCapabilities.fork must be {}", caps.sessionCapabilities);
    check(canonical(caps.auth?.logout) === "{}", "initialize: agentCapabilities.auth.logout must be {}", caps.auth);
    // CodeCompanion without `auth_method` authenticates with the first method: it must work.
    const auth = await zed.agent.request(methods.agent.authenticate, { methodId: init.authMethods[0].id });
    check(auth && typeof auth === "object", "authenticate with the first auth method must succeed", auth);
  });

  await step("zed: one config option per ACP category; mode set by category", zed, async () => {
    active = await zed.agent.buildSession(env.workspace).start();
    ids.main = active.sessionId;
    const options = active.newSessionResponse.configOptions;
    const byCategory = {};
    for (const option of options) {
      if (!option.category) continue;
      check(ACP_CATEGORIES.includes(option.category) || option.category.startsWith("_"), "config options carry an ACP category or a _-prefixed one", option);
      (byCategory[option.category] ??= []).push(option.id);
    }
    const acp = Object.fromEntries(Object.entries(byCategory).filter(([c]) => !c.startsWith("_")));
    check(canonical(acp) === canonical({ model: ["model"], mode: ["mode"], thought_level: ["reasoning_effort"] }), "exactly one option per ACP category: model, mode, reasoning effort", byCategory);
    const modeOption = options.find((o) => o.category === "mode");
    check(modeOption.currentValue === active.modes.currentModeId, "the mode option shows the current mode", { modeOption, modes: active.modes });
    const startSeq = zed.seq;
    const set = await zed.agent.request(methods.agent.session.setConfigOption, { sessionId: ids.main, configId: modeOption.id, value: "read-only" });
    check(set.configOptions.find((o) => o.id === "sandbox_mode").currentValue === "read-only", "setting the mode option sets the sandbox", set.configOptions);
    await settle();
    check(zed.updatesFor(ids.main, startSeq).some((u) => u.update.sessionUpdate === "current_mode_update" && u.update.currentModeId === "read-only"), "setting the mode option sends current_mode_update");
    await zed.agent.request(methods.agent.session.setConfigOption, { sessionId: ids.main, configId: modeOption.id, value: "auto" });
  });

  await step("zed: an empty session is not listed, loads while live, and leaves no file", zed, async () => {
    const empty = await zed.agent.request(methods.agent.session.new, { cwd: env.workspace, mcpServers: [] });
    const file = empty._meta?.cody?.sessionFile;
    check(typeof file === "string" && existsSync(file), "a live session holds its file", empty._meta);
    const listed = await zed.agent.request(methods.agent.session.list, { cwd: env.workspace });
    check(!listed.sessions.some((s) => s.sessionId === empty.sessionId), "session/list must not list a never-prompted session", listed);
    const loaded = await zed.agent.request(methods.agent.session.load, { sessionId: empty.sessionId, cwd: env.workspace, mcpServers: [] });
    check(loaded && loaded.modes, "session/load of an empty live session answers", loaded);
    await zed.agent.request(methods.agent.session.close, { sessionId: empty.sessionId });
    check(!existsSync(file), "closing a never-prompted session removes its file (an empty chat is not saved)", file);
  });

  await step("zed: an edit names its file; option ids equal kinds; allow_always is remembered", zed, async () => {
    let seen;
    zed.permissionHandlers.set(ids.main, async ({ params }) => {
      seen = params;
      const option = params.options.find((o) => o.kind === "allow_always");
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    });
    // The `ask` mode: an edit in the workspace asks (the default runs it in the sandbox).
    await zed.agent.request(methods.agent.session.setMode, { sessionId: active.sessionId, modeId: "ask" });
    const turn = await runTurn(zed, active, "write notes/zed.txt: hello zed");
    check(turn.response.stopReason === "end_turn", "the edit turn ends end_turn", turn.response);
    check(seen, "an approval was asked");
    for (const option of seen.options) {
      const kind = option.optionId === "allow_project" ? "allow_always" : option.optionId;
      check(option.kind === kind, "permission option ids equal their kinds (allow_project: allow_always)", seen.options);
    }
    const target = join(real, "notes", "zed.txt");
    check(canonical(seen.toolCall.locations) === canonical([{ path: target }]), "the approval carries the file's absolute path", seen.toolCall);
    const call = toolCalls(turn.updates).get(seen.toolCall.toolCallId);
    check(canonical(call.start.locations) === canonical([{ path: target }]), "tool_call locations name the absolute file", call.start);
    check(canonical(call.final.locations) === canonical([{ path: target, line: 1 }]), "the final tool_call_update names the file and line", call.final);
    const diff = (call.final.content ?? []).find((c) => c.type === "diff");
    check(diff && diff.path === target && diff.newText === "hello zed", "the edit carries its diff", call.final.content);
    check(readFileSync(target, "utf8") === "hello zed", "the file was written");
    await assertNothingAfterAnswer(zed, ids.main, lastPromptId(zed), "edit turn");
    ids.write = { id: call.start.toolCallId, final: call.final, kind: call.start.kind, title: call.start.title };

    seen = undefined;
    const again = await runTurn(zed, active, "write notes/zed.txt: hello again");
    check(again.response.stopReason === "end_turn" && seen === undefined, "allow_always: the same file is not asked about again");
    check(readFileSync(target, "utf8") === "hello again", "the second write happened");
    await zed.agent.request(methods.agent.session.setMode, { sessionId: active.sessionId, modeId: "auto" });
  });

  await step("zed: usage in the prompt result, cost in usage_update, messageId on chunks, read locations", zed, async () => {
    const turn = await runTurn(zed, active, "read notes/zed.txt");
    const usage = turn.response.usage;
    check(usage && usage.inputTokens > 0 && usage.outputTokens > 0 && usage.totalTokens === usage.inputTokens + usage.outputTokens, "session/prompt answers ACP usage", turn.response);
    const meter = turn.updates.filter((u) => u.sessionUpdate === "usage_update");
    check(meter.length > 0 && meter.every((u) => u.cost && u.cost.currency === "USD" && typeof u.cost.amount === "number"), "usage_update carries the session cost", meter);
    const texts = messageIds(turn.updates, "agent_message_chunk");
    check(texts.length === 2, "one messageId per assistant message (before and after the tool)", texts);
    messageIds(turn.updates, "agent_thought_chunk");
    const [read] = [...toolCalls(turn.updates).values()];
    const target = join(real, "notes", "zed.txt");
    check(read.start.kind === "read" && canonical(read.final.locations) === canonical([{ path: target, line: 1 }]), "a read names its file and first line", read.final);
    await assertNothingAfterAnswer(zed, ids.main, lastPromptId(zed), "read turn");
    ids.liveTexts = texts;
  });

  await step("zed: a prompt with embedded resources", zed, async () => {
    const prompt = [
      { type: "text", text: "summarise these" },
      { type: "resource", resource: { uri: `file://${real}/notes/zed.txt`, text: "hello again", mimeType: "text/plain" } },
      { type: "resource_link", uri: `file://${real}/notes/other.txt`, name: "other.txt" },
    ];
    const response = await zed.agent.request(methods.agent.session.prompt, { sessionId: ids.main, prompt });
    check(response.stopReason === "end_turn", "a prompt with resources ends end_turn", response);
    await assertNothingAfterAnswer(zed, ids.main, lastPromptId(zed), "resource turn");
    ids.resourcePrompt = prompt;
  });

  await step("zed: cancel, twice, with a permission prompt open: answered cancelled, nothing after", zed, async () => {
    let arrived;
    const asked = new Promise((r) => (arrived = r));
    zed.permissionHandlers.set(ids.main, async ({ signal }) => {
      arrived();
      await waitAbort(signal, 10_000);
      return { outcome: { outcome: "cancelled" } };
    });
    const turnPromise = runTurn(zed, active, "run outside touch zed-cancelled.txt");
    await withTimeout(asked, STEP_TIMEOUT_MS, "the permission request");
    await zed.agent.notify(methods.agent.session.cancel, { sessionId: ids.main });
    await zed.agent.notify(methods.agent.session.cancel, { sessionId: ids.main });
    const turn = await turnPromise;
    check(turn.response.stopReason === "cancelled", "a repeated cancel still answers stopReason cancelled", turn.response);
    check(!existsSync(join(env.workspace, "zed-cancelled.txt")), "the command never ran");
    await assertNothingAfterAnswer(zed, ids.main, lastPromptId(zed), "cancelled turn");
  });

  await step("zed: session/fork (and its _cody/session/fork alias)", zed, async () => {
    const fork = await zed.agent.request(methods.agent.session.fork, { sessionId: ids.main, cwd: env.workspace, mcpServers: [] });
    check(typeof fork.sessionId === "string" && fork.sessionId !== ids.main, "session/fork answers a new session", fork);
    check(Array.isArray(fork.configOptions) && fork.modes, "the fork has modes and config options", fork);
    const alias = await zed.agent.request("_cody/session/fork", { sessionId: ids.main, cwd: env.workspace, mcpServers: [], atMessage: 0 });
    check(typeof alias.sessionId === "string" && alias.sessionId !== fork.sessionId, "_cody/session/fork still works", alias);
    ids.fork = fork.sessionId;
  });

  await step("zed: logout answers (no OAuth login here: nothing to end)", zed, async () => {
    const answer = await zed.agent.request(methods.agent.logout, {});
    check(canonical(answer?._meta?.cody?.loggedOut) === "[]", "logout answers with what it ended", answer);
    active.dispose();
    const { code } = await zed.close();
    check(code === 0, "zed#1 must exit 0", { code });
  });

  const zed2 = new DaemonSession(env, "zed#2", { fs: true });
  await step("zed: session/load replays edits, kinds, locations, thoughts, resources and messageIds", zed2, async () => {
    await zed2.agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: ZED_CLIENT_CAPABILITIES, clientInfo: { name: "zed", version: "0.200.0" } });
    const listed = await zed2.agent.request(methods.agent.session.list, { cwd: env.workspace });
    const listedIds = listed.sessions.map((s) => s.sessionId);
    check(listedIds.includes(ids.main) && listedIds.includes(ids.fork), "the prompted session and its fork are listed", listedIds);
    const startSeq = zed2.seq;
    await zed2.agent.request(methods.agent.session.load, { sessionId: ids.main, cwd: env.workspace, mcpServers: [] });
    await settle();
    const updates = zed2.updatesFor(ids.main, startSeq).map((u) => u.update);
    const calls = new Map(updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => [u.toolCallId, u]));
    const write = calls.get(ids.write.id);
    check(write && write.kind === ids.write.kind && write.title === ids.write.title, "the edit is replayed with its kind and title", write);
    check(canonical(write.locations) === canonical(ids.write.final.locations), "the edit is replayed with its locations", write);
    check(canonical(write.content) === canonical(ids.write.final.content), "the edit is replayed with its diff, not as plain text", write.content);
    check(updates.some((u) => u.sessionUpdate === "agent_thought_chunk"), "thoughts are replayed");
    const userBlocks = updates.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content);
    const resourceAt = userBlocks.findIndex((b) => b.type === "resource");
    check(resourceAt > 0 && canonical(userBlocks.slice(resourceAt - 1, resourceAt + 2)) === canonical(ids.resourcePrompt), "the prompt's resources are replayed as sent", userBlocks);
    const replayedTexts = messageIds(updates, "agent_message_chunk");
    check(ids.liveTexts.every((id) => replayedTexts.includes(id)), "replayed messages keep their live messageIds", { live: ids.liveTexts, replayed: replayedTexts });
    const { code } = await zed2.close();
    check(code === 0, "zed#2 must exit 0", { code });
  });

  rmSync(env.root, { recursive: true, force: true });
  return zed.rawUpdates + zed2.rawUpdates;
}


main().catch((error) => {
  reportError(`FAIL [harness]: ${error?.stack ?? error}`);
  process.exit(1);
});
