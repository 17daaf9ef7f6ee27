// Background processes in the page (docs/protocol.md "Processes"): the open session's
// processes (`_cody/session/processes`), oldest first, each with its state, pid, command and
// exit code, and a Stop button for a running one (`_cody/process/kill`: the process and
// everything it started).
//
// Shown in the session header's `#extras` place (SessionView.renderExtras) only when the
// daemon lists `_cody/session/processes` in `initialize`'s extensions. The list is fetched
// once a session is open (after its replay: SessionView.adopt), when a tool call starts or ends, when a call's `rawOutput` says a
// process started or ended, after each turn, and on demand (Refresh); the toggle's count
// follows the updates in between, like the terminal client's status bar. A command is the
// model's text: it reaches the DOM through dom.js only (one inert line each).

import { el, replace, when } from "./dom.js";

const REFRESH_DELAY_MS = 250;

/** `running`, `exited 0`, `killed by SIGTERM` (the terminal client's words). */
export function processState(info) {
  if (info.running) return "running";
  if (info.signal) return `killed by ${info.signal}`;
  if (info.exitCode === null || info.exitCode === undefined) return "ended";
  return `exited ${info.exitCode}`;
}

function commandText(command) {
  return Array.isArray(command) ? command.join(" ") : String(command ?? "");
}

export class ProcessesPanel {
  /** `view` is the SessionView: its rpc and its open session (`sessionId`). */
  constructor(view) {
    this.view = view;
    this.open = false;
    this.sessionId = null;
    this.processes = [];
    this.running = new Set();
    this.limit = null;
    this.error = null;
    /** The last listing's error (cleared by the next listing that works). */
    this.listError = null;
    this.stopping = new Set();
    this.timer = 0;
    this.node = el("div", { class: "processes" });
  }

  /** The panel for the session now open (a fresh list when the session changed). */
  element() {
    if (this.view.sessionId !== this.sessionId) {
      this.sessionId = this.view.sessionId;
      this.processes = [];
      this.running = new Set();
      this.error = this.listError = null;
      this.stopping.clear();
    }
    this.render();
    return this.node;
  }

  async toggle() {
    this.open = !this.open;
    this.render();
    if (this.open) await this.refresh();
  }

  /** A tool call of the open session started, changed state or told of a process. */
  observe(update) {
    if (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update") return;
    const raw = update.rawOutput;
    let counted = false;
    if (raw && typeof raw === "object" && Number.isInteger(raw.processId) && typeof raw.running === "boolean") {
      if (raw.running) this.running.add(raw.processId);
      else this.running.delete(raw.processId);
      counted = true;
    }
    const ended = update.status === "completed" || update.status === "failed";
    if (update.sessionUpdate === "tool_call" || ended || counted) this.soon();
  }

  /** Refresh shortly (many updates in a burst make one request). */
  soon() {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.refresh();
    }, REFRESH_DELAY_MS);
  }

  /** List again; `settle`: the session was just opened, so a call whose process the daemon
   * no longer has (its replay said it ran) shows it ended. */
  async refresh(settle = false) {
    const sessionId = this.sessionId;
    if (!sessionId) return;
    try {
      const result = await this.view.rpc.request("_cody/session/processes", { sessionId });
      if (sessionId !== this.sessionId) return;
      this.processes = result.processes ?? [];
      this.limit = result.limit ?? null;
      this.running = new Set(this.processes.filter((info) => info.running).map((info) => info.processId));
      this.listError = null;
      this.view.transcript.settleProcesses(this.processes, settle);
    } catch (error) {
      if (sessionId !== this.sessionId) return;
      this.listError = `Could not list the processes: ${error.message}`;
    }
    this.render();
  }

  async stop(info) {
    const sessionId = this.sessionId;
    if (!sessionId || this.stopping.has(info.processId)) return;
    this.stopping.add(info.processId);
    this.error = null;
    this.render();
    try {
      const result = await this.view.rpc.request("_cody/process/kill", { sessionId, processId: info.processId });
      if (sessionId !== this.sessionId) return;
      if (result.outcome === "already ended") this.error = `Process ${info.processId} had already ended.`;
    } catch (error) {
      this.stopping.delete(info.processId);
      if (sessionId === this.sessionId) this.error = `Could not stop process ${info.processId}: ${error.message}`;
      this.render();
      return;
    }
    this.stopping.delete(info.processId);
    await this.refresh();
  }

  // -- rendering -------------------------------------------------------------------------

  render() {
    const count = this.running.size;
    const label = this.open ? "Hide processes" : count ? `Processes (${count} running)` : "Processes";
    const toggle = el("button", { type: "button", class: "secondary small", id: "processes-toggle", "aria-expanded": this.open ? "true" : "false", "data-status": count ? "running" : "idle", text: label });
    toggle.addEventListener("click", () => this.toggle());
    replace(this.node, toggle, this.open ? this.body() : null);
  }

  body() {
    const refresh = el("button", { type: "button", class: "secondary small", id: "processes-refresh", text: "Refresh" });
    refresh.addEventListener("click", () => this.refresh());
    const parts = [];
    for (const error of [this.error, this.listError].filter(Boolean)) parts.push(el("div", { class: "error", role: "alert", text: error }));
    if (!this.processes.length) parts.push(el("div", { class: "muted", text: "No processes: a command the model starts in the background, or one that outlives its call, is listed here." }));
    else parts.push(el("ul", { class: "process-list", "aria-label": "Processes" }, ...this.processes.map((info) => this.row(info))));
    const limit = this.limit ? el("span", { class: "muted", text: `at most ${this.limit} run at once` }) : null;
    return el("div", { class: "process-panel", "aria-live": "polite" }, el("div", { class: "process-bar" }, refresh, limit), ...parts);
  }

  row(info) {
    const state = processState(info);
    const details = [`pid ${info.pid}`, when(info.startedAt) && `started ${when(info.startedAt)}`, info.sandboxed ? "sandboxed" : "not sandboxed", info.stoppedBy && `stopped by ${info.stoppedBy}`];
    const stop = info.running
      ? el("button", { type: "button", class: "secondary small", "data-kind": "stop", disabled: this.stopping.has(info.processId), title: "Stop it and everything it started (SIGTERM, then SIGKILL)", text: this.stopping.has(info.processId) ? "Stopping…" : "Stop" })
      : null;
    stop?.addEventListener("click", () => this.stop(info));
    return el(
      "li",
      { class: "process", "data-id": String(info.processId), "data-status": info.running ? "running" : "ended" },
      el(
        "div",
        { class: "process-head" },
        el("span", { class: "process-state", line: state }),
        el("span", { class: "process-id muted", text: `#${info.processId}` }),
        el("code", { class: "process-command", line: commandText(info.command) }),
        stop,
      ),
      el("div", { class: "process-details muted", line: details.filter(Boolean).join(" · ") }),
    );
  }
}
