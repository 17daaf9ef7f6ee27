// The open session: its replay, live updates, prompts, cancel, approvals and settings.
//
// - A Cody session opens with `session/load` (its full replay, then live updates); when it
//   is running a turn of another client's, with `_cody/session/history` for the past and
//   `session/resume` to watch the rest live.
// - A Codex or Claude Code session is read with `_cody/history/read` (read-only) until the
//   user continues it: `_cody/history/import` makes a Cody session of it, opened as above.
// - Approvals (`session/request_permission`) come only to the connection that sent the
//   prompt (the daemon routes them); they are shown with their diff and options and answered
//   with the chosen option, or withdrawn when the daemon cancels them. A subagent's approvals
//   come the same way, in the child session's name.
// - MCP elicitations (`_cody/mcp/elicit`) come the same way as approvals: a form (elicit.js)
//   answered accept, decline or cancel, with a note in the transcript either way.
// - A subagent's updates (another session id, `_meta.cody.parentSessionId` = the open one)
//   become activity lines under the parent's `task` call (acp.js `childActivity`), never
//   items of the parent's own transcript.

import { RpcError } from "./rpc.js";
import { applyUpdate, childActivity } from "./acp.js";
import { CheckpointsPanel } from "./checkpoints.js";
import { Elicitations } from "./elicit.js";
import { McpStatus } from "./mcp.js";
import { ProcessesPanel } from "./processes.js";
import { el, oneLine, projectName, replace } from "./dom.js";
import { diffView } from "./diff.js";
import { agentLabel } from "./history.js";
import { planList } from "./transcript.js";
import { addMessages } from "./unified.js";

const SESSION_BUSY = -32011;
const OPTION_KEYS = { allow_once: "1", allow_always: "2", reject_once: "3", reject_always: "4" };

/** How the history methods find a listed session: its file when known, else agent and id. */
function reference(info) {
  return info.path ? { path: info.path } : { agent: info.agent, sessionId: info.sessionId };
}

export class SessionView {
  constructor(rpc, refs, transcript, hooks) {
    this.rpc = rpc;
    this.refs = refs;
    this.transcript = transcript;
    this.hooks = hooks;
    this.state = null;
    this.busy = false;
    this.approvals = [];
    this.extensions = new Set();
    this.childTitles = new Map();
    this.checkpoints = new CheckpointsPanel(this);
    this.processes = new ProcessesPanel(this);
    this.mcp = new McpStatus();
    transcript.onPlan = (entries) => this.showPlan(entries);
    rpc.onNotification("session/update", (params) => this.update(params));
    rpc.onNotification("_cody/mcp/status", (params) => {
      this.mcp.record(params);
      if (params?.sessionId === this.sessionId) this.renderExtras();
    });
    rpc.onRequest("session/request_permission", (params, signal) => this.ask(params, signal));
    this.elicitations = new Elicitations(refs.elicit, transcript, () => this.sessionId, () => refs.prompt.focus());
    rpc.onRequest("_cody/mcp/elicit", (params, signal) => this.elicitations.ask(params, signal));
  }

  get sessionId() {
    return this.state?.agent === "cody" ? this.state.sessionId : null;
  }

  reset(agent, sessionId, info) {
    this.transcript.clear();
    this.childTitles.clear();
    this.state = { agent, sessionId, info, title: info?.title ?? "", modes: null, configOptions: [], usage: null, meta: null, readOnly: agent !== "cody" };
    this.showPlan([]);
    this.renderHead();
  }

  // -- opening ---------------------------------------------------------------------------

  async open(info) {
    if (info.agent === "cody") await this.openCody(info.sessionId, info);
    else await this.openForeign(info);
  }

  async openCody(sessionId, info) {
    this.reset("cody", sessionId, info);
    const cwd = info?.cwd && info.cwd.startsWith("/") ? info.cwd : "/";
    let result;
    try {
      result = await this.rpc.request("session/load", { sessionId, cwd, mcpServers: [] });
    } catch (error) {
      if (!(error instanceof RpcError) || error.code !== SESSION_BUSY) throw error;
      // Another client's turn is running: its past from the file, the rest live.
      this.transcript.clear();
      const past = await this.rpc.request("_cody/session/history", { sessionId });
      addMessages(this.transcript, past.messages ?? []);
      this.transcript.note("notice", "A turn of another client is running; its updates follow live.");
      result = await this.rpc.request("session/resume", { sessionId, cwd, mcpServers: [] });
    }
    if (this.state?.sessionId !== sessionId) return;
    this.adopt(result);
    this.transcript.render();
  }

  /** The open Cody session replayed again (after its conversation was rewound). */
  async reload() {
    if (this.sessionId) await this.openCody(this.sessionId, this.state.info);
  }

  async openForeign(info) {
    this.reset(info.agent, info.sessionId, info);
    let cursor = null;
    let pages = 0;
    do {
      const params = { ...reference(info), includeOriginal: false, limit: 500 };
      if (cursor) params.cursor = cursor;
      const page = await this.rpc.request("_cody/history/read", params);
      if (this.state?.sessionId !== info.sessionId) return;
      addMessages(this.transcript, page.messages ?? []);
      if (page.skippedLines) this.transcript.note("notice", `${page.skippedLines} unreadable line(s) skipped.`);
      cursor = page.nextCursor ?? null;
      pages += 1;
    } while (cursor && pages < 200);
    this.transcript.closeOpenCalls();
    this.transcript.note("notice", `A ${agentLabel(info.agent)} session, read-only here: “Continue in Cody” makes a Cody session of it.`);
    this.transcript.render();
    this.renderHead();
  }

  /** Continue a Codex or Claude Code session: import it into a new Cody session in `cwd`. */
  async continueIn(cwd) {
    const result = await this.rpc.request("_cody/history/import", { ...reference(this.state.info), cwd });
    const info = { agent: "cody", sessionId: result.sessionId, cwd, title: this.state.title };
    this.hooks.opened(info);
    await this.openCody(result.sessionId, info);
  }

  async newSession(cwd) {
    const result = await this.rpc.request("session/new", { cwd, mcpServers: [] });
    const info = { agent: "cody", sessionId: result.sessionId, cwd, title: "" };
    this.reset("cody", result.sessionId, info);
    this.adopt(result);
    this.hooks.opened(info);
    this.refs.prompt.focus();
  }

  adopt(result) {
    this.state.modes = result.modes ?? null;
    this.state.configOptions = result.configOptions ?? [];
    this.state.meta = result._meta?.cody ?? null;
    for (const warning of this.state.meta?.warnings ?? []) this.transcript.note("notice", warning);
    this.renderHead();
    if (this.extensions.has("_cody/session/processes")) this.processes.refresh(true);
  }

  // -- live ------------------------------------------------------------------------------

  update(params) {
    if (!this.state || !params) return;
    const parent = params._meta?.cody;
    if (params.sessionId !== this.sessionId) {
      if (parent?.parentSessionId === this.sessionId && this.sessionId) this.childUpdate(params, parent);
      return;
    }
    const update = params.update ?? {};
    const changed = applyUpdate(this.transcript, this.state, update);
    if (changed) this.renderHead();
    if (this.extensions.has("_cody/session/processes")) {
      const before = this.processes.running.size;
      this.processes.observe(update);
      if (this.processes.running.size !== before) this.processes.render();
    }
  }

  /** A subagent's update: one activity line under the parent's `task` call that started it. */
  childUpdate(params, parent) {
    if (typeof parent.parentToolCallId !== "string") return;
    const titles = this.childTitles.get(params.sessionId) ?? new Map();
    this.childTitles.set(params.sessionId, titles);
    const line = childActivity(params.update ?? {}, titles);
    if (line === null) return;
    const child = { sessionId: params.sessionId, agent: typeof parent.agent === "string" ? parent.agent : "subagent" };
    this.transcript.childActivity(parent.parentToolCallId, child, line);
  }

  async prompt(text) {
    const sessionId = this.sessionId;
    if (!sessionId || this.busy) return;
    this.setBusy(true);
    this.transcript.add({ kind: "user", text });
    try {
      const result = await this.rpc.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
      if (this.sessionId !== sessionId) return;
      const reason = result?.stopReason;
      if (reason && reason !== "end_turn") this.transcript.note("notice", `Turn ended: ${reason.replace(/_/g, " ")}.`);
      const usage = result?._meta?.cody?.usage;
      if (usage) this.transcript.note("usage", `${(usage.inputTokens ?? 0).toLocaleString()} in · ${(usage.outputTokens ?? 0).toLocaleString()} out`);
    } catch (error) {
      if (this.sessionId === sessionId) this.transcript.note("error", error.code === SESSION_BUSY ? "The session is running a turn (another client's); wait or stop it." : error.message);
    } finally {
      if (this.sessionId === sessionId) {
        this.transcript.closeOpenCalls();
        this.transcript.render();
      }
      this.setBusy(false);
      this.hooks.turnEnded();
      this.checkpoints.refresh();
      if (this.extensions.has("_cody/session/processes")) this.processes.refresh();
    }
  }

  cancel() {
    if (this.sessionId) this.rpc.notify("session/cancel", { sessionId: this.sessionId });
  }

  setBusy(busy) {
    this.busy = busy;
    this.refs.send.disabled = busy || !this.sessionId;
    this.refs.cancel.disabled = !busy;
    this.refs.main.dataset.busy = busy ? "true" : "false";
    this.renderExtras();
  }

  async setOption(configId, value) {
    try {
      const result = await this.rpc.request("session/set_config_option", { sessionId: this.sessionId, configId, value });
      this.state.configOptions = result.configOptions ?? this.state.configOptions;
    } catch (error) {
      this.transcript.note("error", error.message);
    }
    this.renderHead();
  }

  async setMode(modeId) {
    try {
      await this.rpc.request("session/set_mode", { sessionId: this.sessionId, modeId });
      if (this.state.modes) this.state.modes.currentModeId = modeId;
    } catch (error) {
      this.transcript.note("error", error.message);
    }
    this.renderHead();
  }

  // -- approvals -------------------------------------------------------------------------

  ask(params, signal) {
    return new Promise((resolve) => {
      const entry = { params, resolve };
      this.approvals.push(entry);
      signal.addEventListener("abort", () => {
        this.approvals = this.approvals.filter((other) => other !== entry);
        this.renderApproval();
      });
      this.renderApproval();
    });
  }

  answer(entry, optionId) {
    this.approvals = this.approvals.filter((other) => other !== entry);
    entry.resolve({ outcome: { outcome: "selected", optionId } });
    this.renderApproval();
    this.refs.prompt.focus();
  }

  renderApproval() {
    const box = this.refs.approval;
    const entry = this.approvals[0];
    box.hidden = !entry;
    if (!entry) {
      replace(box);
      return;
    }
    const call = entry.params.toolCall ?? {};
    const texts = [];
    const diffs = [];
    for (const part of call.content ?? []) {
      if (part.type === "diff") diffs.push(diffView(part.path, part.oldText ?? null, part.newText ?? ""));
      else if (part.type === "content" && part.content?.type === "text") texts.push(part.content.text);
    }
    const elsewhere = entry.params.sessionId !== this.sessionId;
    const child = entry.params._meta?.cody;
    const bySubagent = elsewhere && child?.parentSessionId && child.parentSessionId === this.sessionId;
    const sandboxed = entry.params._meta?.cody?.sandboxed;
    replace(
      box,
      el("div", { class: "approval-title" }, el("strong", { text: "Approve? " }), el("span", { line: call.title ?? call.toolCallId ?? "a tool call" })),
      bySubagent
        ? el("div", { class: "muted", line: `Asked by the subagent ${child.agent ?? ""} (session ${entry.params.sessionId})` })
        : elsewhere
          ? el("div", { class: "muted", line: `In another session (${entry.params.sessionId})` })
          : null,
      sandboxed === false ? el("div", { class: "muted", text: "Runs outside the sandbox." }) : null,
      texts.length ? el("pre", { class: "approval-text", text: texts.join("\n") }) : null,
      ...diffs,
      el(
        "div",
        { class: "approval-options" },
        ...(entry.params.options ?? []).map((option) => {
          const key = OPTION_KEYS[option.optionId];
          const button = el("button", {
            type: "button",
            class: option.kind?.startsWith("reject") ? "secondary" : "primary",
            "data-option": option.optionId,
            "aria-keyshortcuts": key,
            text: key ? `${option.name} [${key}]` : option.name,
          });
          button.addEventListener("click", () => this.answer(entry, option.optionId));
          return button;
        }),
      ),
    );
    box.focus();
  }

  /** Keys 1-4 answer the approval on screen. */
  approvalKey(key) {
    const entry = this.approvals[0];
    if (!entry) return false;
    const optionId = Object.entries(OPTION_KEYS).find(([, value]) => value === key)?.[0];
    if (!optionId || !(entry.params.options ?? []).some((option) => option.optionId === optionId)) return false;
    this.answer(entry, optionId);
    return true;
  }

  // -- the header ------------------------------------------------------------------------

  showPlan(entries) {
    const box = this.refs.plan;
    box.hidden = entries.length === 0;
    replace(box, entries.length ? el("div", { class: "plan-title", text: "Plan" }) : null, entries.length ? planList(entries) : null);
  }

  renderHead() {
    const { refs, state } = this;
    if (!state) return;
    refs.title.textContent = oneLine(state.title || "New session");
    const meta = [agentLabel(state.agent), projectName(state.info?.cwd)];
    if (state.meta) meta.push(`${state.meta.provider}/${state.meta.model}`);
    if (state.usage) {
      const percent = state.usage.size ? Math.round((100 * state.usage.used) / state.usage.size) : 0;
      meta.push(`context ${percent}%`);
      if (state.usage.cost) meta.push(`$${Number(state.usage.cost.amount).toFixed(4)}`);
    }
    refs.meta.textContent = oneLine(meta.filter(Boolean).join(" · "));
    refs.continueButton.hidden = !state.readOnly;
    refs.composer.hidden = state.readOnly;
    refs.send.disabled = this.busy || !this.sessionId;
    const selects = [];
    const modeOption = (state.configOptions ?? []).some((option) => option.id === "mode");
    if (state.modes?.availableModes?.length && !modeOption) {
      selects.push(this.select("mode", "Mode", state.modes.currentModeId, state.modes.availableModes.map((mode) => ({ value: mode.id, name: mode.name })), (value) => this.setMode(value)));
    }
    for (const option of state.configOptions ?? []) {
      if (option.type !== "select") continue;
      selects.push(this.select(option.id, option.name, option.currentValue, option.options ?? [], (value) => this.setOption(option.id, value)));
    }
    replace(refs.config, ...selects);
    this.renderExtras();
  }

  select(id, label, current, options, onChange) {
    const select = el("select", { name: id, "aria-label": label }, ...options.map((option) => el("option", { value: option.value, line: option.name })));
    select.value = current;
    select.addEventListener("change", () => onChange(select.value));
    return el("label", { class: "setting" }, el("span", { class: "muted", text: label }), select);
  }

  /**
   * The session's MCP servers (mcp.js) once one reported; checkpoints and rewind
   * (checkpoints.js) and background processes (processes.js), each once the daemon serves
   * it (`initialize` `_meta.cody.extensions` lists `_cody/session/checkpoints`,
   * `_cody/session/processes`).
   */
  renderExtras() {
    const box = this.refs.extras;
    const checkpoints = this.extensions.has("_cody/session/checkpoints");
    const processes = this.extensions.has("_cody/session/processes");
    const servers = this.sessionId ? this.mcp.element(this.sessionId) : null;
    box.hidden = (!checkpoints && !processes && !servers) || !this.sessionId;
    if (box.hidden) {
      replace(box);
      return;
    }
    replace(box, servers, checkpoints ? this.checkpoints.element() : null, processes ? this.processes.element() : null);
  }
}
