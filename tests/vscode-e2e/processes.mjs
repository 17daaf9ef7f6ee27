// @ts-check
/**
 * What the VS Code e2e driver reads from /proc: the processes of one run (told apart by an
 * environment marker that code-server and all it starts inherit), their descendants, whether
 * a pid still runs, and a poll helper.
 */

import { readFileSync, readdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * The live processes whose argv contains `needle` and whose environment holds `marker`.
 * @param {string} marker
 * @param {string} needle
 * @returns {{pid: number, ppid: number, argv: string[]}[]}
 */
export function processes(marker, needle) {
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (!argv.some((arg) => arg.includes(needle))) continue;
      const environ = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (!environ.includes(marker)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      found.push({ pid: Number(entry), ppid, argv });
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

/**
 * The Cody daemons of this run.
 * @param {string} marker
 * @returns {{pid: number, ppid: number, argv: string[]}[]}
 */
export function daemons(marker) {
  return processes(marker, "cody_daemon");
}

/**
 * The live processes under `ancestor` whose argv is exactly `argv` (a command the daemon runs
 * may be in a sandbox with an environment of its own: found by ancestry, not by a marker).
 * @param {number} ancestor
 * @param {string[]} argv
 * @returns {number[]}
 */
export function descendants(ancestor, argv) {
  /** @type {Map<number, number>} */
  const parents = new Map();
  /** @type {number[]} */
  const candidates = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") continue;
      parents.set(Number(entry), Number(fields[1]));
      const found = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean);
      const [program, ...args] = found;
      const [wantProgram, ...wantArgs] = argv;
      const same = program !== undefined && wantProgram !== undefined && (program === wantProgram || program.endsWith(`/${wantProgram}`));
      if (same && JSON.stringify(args) === JSON.stringify(wantArgs)) candidates.push(Number(entry));
    } catch {
      // gone
    }
  }
  return candidates.filter((pid) => {
    for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at)) if (at === ancestor) return true;
    return false;
  });
}

/**
 * Running (not ended, not a zombie).
 * @param {number} pid
 */
export function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/**
 * Poll until `check()` is true; fail with `what` after `timeoutMs`.
 * @param {() => boolean} check
 * @param {number} timeoutMs
 * @param {string} what
 * @param {number} [everyMs]
 */
export async function until(check, timeoutMs, what, everyMs = 50) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${String(timeoutMs)} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
