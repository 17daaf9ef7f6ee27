/**
 * The daemon as a child process: spawn with piped stdio, drain stderr line by line, report
 * the exit once.
 *
 * Invariant: stderr is always drained (a full pipe would block the daemon), and `exited`
 * resolves exactly once, whatever way the process ends.
 */

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";

import { CodyError } from "./errors";

/** How to start the daemon (argv, no shell). */
export interface DaemonCommand {
  command: string;
  args: string[];
  /** The whole environment of the daemon (not merged with this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const STDERR_TAIL_LINES = 20;

export class DaemonProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<ExitInfo>;
  private exitInfo: ExitInfo | undefined;
  private readonly stderrTail: string[] = [];

  private constructor(child: ChildProcessWithoutNullStreams, onStderr: ((line: string) => void) | undefined) {
    this.child = child;
    this.exited = new Promise<ExitInfo>((resolve) => {
      child.once("exit", (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
    let partial = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      const lines = (partial + chunk).split(/\r?\n/);
      partial = lines.pop() ?? "";
      for (const line of lines) this.stderrLine(line, onStderr);
    });
    child.stderr.on("end", () => {
      if (partial) this.stderrLine(partial, onStderr);
      partial = "";
    });
    // EPIPE on a dead daemon's stdin surfaces through the connection; keep it from crashing the host.
    child.stdin.on("error", () => undefined);
  }

  /** Spawn and wait until the OS has started the process (or failed to). */
  static spawn(command: DaemonCommand, onStderr?: (line: string) => void): Promise<DaemonProcess> {
    return new Promise<DaemonProcess>((resolve, reject) => {
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawn(command.command, command.args, {
          cwd: command.cwd,
          env: command.env,
          stdio: ["pipe", "pipe", "pipe"],
          windowsHide: true,
        });
      } catch (error) {
        reject(spawnError(command, error));
        return;
      }
      const daemon = new DaemonProcess(child, onStderr);
      child.once("spawn", () => {
        resolve(daemon);
      });
      child.once("error", (error) => {
        reject(spawnError(command, error));
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The exit, once it happened. */
  get exit(): ExitInfo | undefined {
    return this.exitInfo;
  }

  /** The last lines the daemon wrote to stderr (for error messages). */
  get recentStderr(): string[] {
    return [...this.stderrTail];
  }

  kill(signal: NodeJS.Signals): void {
    if (this.exitInfo === undefined) this.child.kill(signal);
  }

  private stderrLine(line: string, onStderr: ((line: string) => void) | undefined): void {
    this.stderrTail.push(line);
    if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
    onStderr?.(line);
  }
}

function spawnError(command: DaemonCommand, error: unknown): CodyError {
  const reason = error instanceof Error ? error.message : String(error);
  const argv = [command.command, ...command.args].join(" ");
  return new CodyError("daemon", `Could not start the Cody daemon (${argv}): ${reason}`, {
    detail: ["Set `cody.daemon.command` to the daemon's argv, e.g. [\"/path/to/cody/.venv/bin/python\", \"-m\", \"cody_daemon\"]."],
  });
}

/** `"exit code 1"`, `"signal SIGKILL"`. */
export function describeExit(exit: ExitInfo): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${String(exit.code)}`;
}
