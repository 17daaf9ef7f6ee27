/**
 * Test support: the real Cody daemon in a throwaway home, and small async helpers.
 *
 * The daemon command is `CODY_DAEMON_CMD` (a JSON array, or split on whitespace) when set, else the repo's
 * `.venv/bin/python -m cody_daemon`. Each environment gets its own HOME, CODY_HOME,
 * CODEX_HOME, CLAUDE_CONFIG_DIR and TMPDIR, and no provider API keys, so the provider
 * `auto` resolves to the built-in `offline` model.
 */

import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

import { ChatController, type ApprovalUi, type ControllerOptions } from "../../chat/controller";
import type { CodyClientOptions, MessageObserver } from "../../protocol/client";
import type { DaemonCommand } from "../../protocol/process";
import type { CodySessionMeta } from "../../protocol/types";

const SCRUBBED = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "PERPLEXITY_API_KEY", "FIRECRAWL_API_KEY"];

/** The repository root (the directory with `pyproject.toml` and `daemon/`). */
export function repoRoot(): string {
  let dir = __dirname;
  for (;;) {
    if (existsSync(join(dir, "pyproject.toml")) && existsSync(join(dir, "daemon"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no repository root above ${__dirname}`);
    dir = parent;
  }
}

/** argv of the daemon under test: `CODY_DAEMON_CMD` (a JSON array, or words split on whitespace). */
export function daemonArgv(): string[] {
  const fromEnv = process.env.CODY_DAEMON_CMD?.trim();
  if (fromEnv?.startsWith("[")) {
    const parsed: unknown = JSON.parse(fromEnv);
    if (!Array.isArray(parsed) || !parsed.every((word): word is string => typeof word === "string")) {
      throw new Error("CODY_DAEMON_CMD must be a JSON array of strings or a command line");
    }
    return parsed;
  }
  if (fromEnv) return fromEnv.split(/\s+/);
  return [resolve(repoRoot(), ".venv", "bin", "python"), "-m", "cody_daemon"];
}

export interface ChatOptions {
  approvals?: ApprovalUi;
  sessionMeta?: CodySessionMeta;
  observer?: MessageObserver;
  argv?: string[];
}

export class TestEnv {
  readonly root: string;
  readonly workspace: string;
  readonly codyHome: string;
  readonly env: NodeJS.ProcessEnv;

  constructor(root?: string) {
    this.root = root ?? mkdtempSync(join(tmpdir(), "cody-vscode-"));
    const dirs = ["home", "cody-home", "codex-home", "claude-config", "workspace", "tmp"];
    for (const name of dirs) mkdirSync(join(this.root, name), { recursive: true });
    this.workspace = join(this.root, "workspace");
    this.codyHome = join(this.root, "cody-home");
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !SCRUBBED.includes(name)));
    Object.assign(env, {
      LANG: "C.UTF-8",
      HOME: join(this.root, "home"),
      CODY_HOME: this.codyHome,
      CODEX_HOME: join(this.root, "codex-home"),
      CLAUDE_CONFIG_DIR: join(this.root, "claude-config"),
      TMPDIR: join(this.root, "tmp"),
    });
    this.env = env;
  }

  /**
   * Run the daemon on the scripted talk model (tests/support/talk_model.py: `slow <path>`
   * runs a command until <path> exists, anything else is answered `ok: <message>`), whose
   * config.toml `tests/e2e/test_vscode_extension.py` passes in `CODY_TEST_TALK_CONFIG`.
   * False when it is not set (the test then says it was skipped).
   */
  useTalkModel(): boolean {
    const config = process.env.CODY_TEST_TALK_CONFIG;
    if (!config) return false;
    writeFileSync(join(this.codyHome, "config.toml"), config, "utf8");
    this.env.MOCK_API_KEY = "test-key-not-secret";
    return true;
  }

  /** Write files into the workspace: `{ "a.txt": "text" }`. */
  writeFiles(files: Record<string, string>): void {
    for (const [name, text] of Object.entries(files)) {
      const path = join(this.workspace, name);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text, "utf8");
    }
  }

  daemon(argv: string[] = daemonArgv()): DaemonCommand {
    const [command, ...args] = argv;
    if (!command) throw new Error("empty daemon command");
    return { command, args, env: this.env, cwd: this.workspace };
  }

  clientOptions(extra: Partial<CodyClientOptions> = {}): CodyClientOptions {
    return { daemon: this.daemon(), clientInfo: { name: "cody-vscode-tests", version: "0" }, ...extra };
  }

  controllerOptions(options: ChatOptions = {}): ControllerOptions {
    const client: CodyClientOptions = { ...this.clientOptions(), daemon: this.daemon(options.argv) };
    if (options.observer) client.observer = options.observer;
    return {
      client,
      cwd: this.workspace,
      sessionMeta: options.sessionMeta ?? {},
      approvals: options.approvals ?? rejectAll,
    };
  }

  controller(options: ChatOptions = {}): ChatController {
    return new ChatController(this.controllerOptions(options));
  }

  cleanup(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

const rejectAll: ApprovalUi = () => Promise.resolve({ outcome: "selected", optionId: "reject_once" });

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}

export function deferred<T>(): Deferred<T> {
  let resolveFn: ((value: T) => void) | undefined;
  const promise = new Promise<T>((res) => {
    resolveFn = res;
  });
  return {
    promise,
    resolve: (value) => {
      resolveFn?.(value);
    },
  };
}

/** Reject if `promise` takes longer than `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new Error(`timed out after ${String(ms)} ms: ${what}`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Poll until `predicate()` holds. */
export async function waitFor(predicate: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`condition not met in ${String(ms)} ms: ${what}`);
    await new Promise((res) => setTimeout(res, 10));
  }
}
