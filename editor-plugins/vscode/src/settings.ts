/**
 * The extension's settings (`cody.*`) turned into daemon and session options.
 *
 * Invariant: pure, no `vscode` import (extension.ts reads the raw values); a bad value is
 * reported in `problems` and replaced by the default, never thrown.
 */

import type { TraceLevel } from "./protocol/client";
import type { DaemonCommand } from "./protocol/process";
import type { ApprovalPolicy, CodySessionMeta, SandboxMode } from "./protocol/types";

export interface RawSettings {
  command: unknown;
  env: unknown;
  provider: unknown;
  model: unknown;
  approvalPolicy: unknown;
  sandboxMode: unknown;
  backend?: unknown;
  trace: unknown;
}

export interface Settings {
  daemon: DaemonCommand;
  sessionMeta: CodySessionMeta;
  trace: TraceLevel;
  /** Human-readable notes about values that were ignored. */
  problems: string[];
}

export const DEFAULT_COMMAND = ["cody-daemon"];
const POLICIES: readonly ApprovalPolicy[] = ["untrusted", "on-request", "on-failure", "never"];
const SANDBOXES: readonly SandboxMode[] = ["read-only", "workspace-write", "danger-full-access"];
const TRACES: readonly TraceLevel[] = ["off", "messages", "verbose"];
const BACKENDS = ["native", "codex", "claude"] as const;

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[]): value is T {
  return typeof value === "string" && (allowed as readonly string[]).includes(value);
}

export function parseSettings(raw: RawSettings, baseEnv: NodeJS.ProcessEnv, cwd: string | undefined): Settings {
  const problems: string[] = [];
  let argv = DEFAULT_COMMAND;
  if (isStringArray(raw.command) && raw.command.length > 0 && raw.command[0]) {
    argv = raw.command;
  } else if (raw.command !== undefined) {
    problems.push(`cody.daemon.command must be a non-empty array of strings; using ${JSON.stringify(DEFAULT_COMMAND)}`);
  }

  const overrides = new Map<string, string | null>();
  if (typeof raw.env === "object" && raw.env !== null && !Array.isArray(raw.env)) {
    for (const [name, value] of Object.entries(raw.env as Record<string, unknown>)) {
      if (typeof value === "string" || value === null) overrides.set(name, value);
      else problems.push(`cody.daemon.env.${name} must be a string or null; ignored`);
    }
  } else if (raw.env !== undefined) {
    problems.push("cody.daemon.env must be an object of strings; ignored");
  }
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(baseEnv)) {
    if (value !== undefined && !overrides.has(name)) env[name] = value;
  }
  for (const [name, value] of overrides) {
    if (value !== null) env[name] = value;
  }

  const sessionMeta: CodySessionMeta = {};
  if (typeof raw.provider === "string" && raw.provider.trim()) sessionMeta.provider = raw.provider.trim();
  if (typeof raw.model === "string" && raw.model.trim()) sessionMeta.model = raw.model.trim();
  if (oneOf(raw.approvalPolicy, POLICIES)) sessionMeta.approvalPolicy = raw.approvalPolicy;
  else if (raw.approvalPolicy) problems.push(`cody.approvalPolicy must be one of ${POLICIES.join(", ")}; ignored`);
  if (oneOf(raw.sandboxMode, SANDBOXES)) sessionMeta.sandboxMode = raw.sandboxMode;
  else if (raw.sandboxMode) problems.push(`cody.sandboxMode must be one of ${SANDBOXES.join(", ")}; ignored`);
  if (oneOf(raw.backend, BACKENDS)) sessionMeta.backend = raw.backend;
  else if (raw.backend) problems.push(`cody.backend must be one of ${BACKENDS.join(", ")}; ignored`);

  const trace = oneOf(raw.trace, TRACES) ? raw.trace : "verbose";
  const [command, ...args] = argv;
  const daemon: DaemonCommand = { command: command ?? "cody-daemon", args, env };
  if (cwd) daemon.cwd = cwd;
  return { daemon, sessionMeta, trace, problems };
}
