// A session's transcript: user and agent text, thoughts, tool calls (with diffs and output),
// plans, usage and notices, rendered into one container. Both sources feed it: ACP
// `session/update`s (live turns and a Cody session's replay: acp.js) and unified messages
// (Codex and Claude Code sessions: unified.js).
//
// Invariants: one item per tool call id (later updates change it in place, and live output
// appended after the call completed stays on it, bounded); a subagent's activity lines sit
// on its parent's `task` call, never among the parent's own items; text chunks of
// the same kind and message extend one item; rendering is batched per animation frame and
// keeps the view at the bottom only when it was there.

import { el, replace, richText } from "./dom.js";
import { processState } from "./processes.js";
import { diffView, patchView } from "./diff.js";

const OUTPUT_LINES = 40;
/** Characters of a call's output the page keeps (a background process may print for long). */
const OUTPUT_KEPT = 256 * 1024;
/** Lines of a subagent's activity kept under its `task` call (VS Code keeps as many). */
const ACTIVITY_KEPT = 50;

export class Transcript {
  constructor(container) {
    this.container = container;
    this.items = [];
    this.calls = new Map();
    this.dirty = new Set();
    this.frame = 0;
    this.onPlan = () => {};
  }

  clear() {
    this.items = [];
    this.calls.clear();
    this.dirty.clear();
    replace(this.container);
  }

  add(item) {
    this.items.push(item);
    item.node = el("div");
    this.container.appendChild(item.node);
    this.touch(item);
    return item;
  }

  touch(item) {
    this.dirty.add(item);
    if (!this.frame) this.frame = requestAnimationFrame(() => this.render());
  }

  /** Render what changed now (tests and replays call it to be done before they look). */
  render() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    const box = this.container.closest(".scroll") ?? this.container;
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 60;
    for (const item of this.dirty) {
      const node = itemNode(item);
      item.node.replaceWith(node);
      item.node = node;
    }
    this.dirty.clear();
    if (atBottom) box.scrollTop = box.scrollHeight;
  }

  /** Text of `kind` ("user", "agent", "thought"): extends the last item when it is the same
   * kind and message, else starts one. */
  text(kind, text, messageId) {
    const last = this.items.at(-1);
    if (last && last.kind === kind && (messageId === undefined || messageId === null || last.messageId === messageId)) {
      last.text += text;
      this.touch(last);
      return last;
    }
    return this.add({ kind, text, messageId });
  }

  /** A tool call's new state (fields absent from `change` stay as they were; `append`
   * continues its output; a `subagent` keeps the activity already shown). */
  call(id, change) {
    let item = this.calls.get(id);
    if (!item) {
      item = this.add({ kind: "tool", id, title: id, toolKind: "other", status: "pending", input: null, output: "", dropped: 0, diffs: [], patch: null, plan: null, process: null, subagent: null, expanded: false });
      this.calls.set(id, item);
    }
    const { append, subagent, ...rest } = change;
    for (const [key, value] of Object.entries(rest)) if (value !== undefined && value !== null) item[key] = value;
    if (rest.output !== undefined && rest.output !== null) {
      item.dropped = 0;
      item.liveAfterResult = false;
    }
    if (typeof append === "string" && append) {
      // Output after the call's result (a background process): on a line of its own.
      const after = (item.status === "completed" || item.status === "failed") && !item.liveAfterResult;
      if (after) item.liveAfterResult = true;
      const gap = after && item.output && !item.output.endsWith("\n") ? "\n" : "";
      item.output = (item.output ?? "") + gap + append;
      const excess = item.output.length - OUTPUT_KEPT;
      if (excess > 0) {
        item.output = item.output.slice(excess);
        item.dropped += excess;
      }
    }
    if (subagent && item.subagent?.sessionId !== subagent.sessionId) item.subagent = { ...subagent, activity: [] };
    this.touch(item);
    return item;
  }

  /** A child session's activity line under the `task` call that started it (false: no such call here). */
  childActivity(parentCallId, child, line) {
    const item = this.calls.get(parentCallId);
    if (!item) return false;
    if (!item.subagent) item.subagent = { ...child, background: false, activity: [] };
    item.subagent.activity = [...item.subagent.activity, line].slice(-ACTIVITY_KEPT);
    this.touch(item);
    return true;
  }

  /**
   * The calls' process badges from a `_cody/session/processes` listing (by the call that
   * started each process); with `unlistedEnded`, a call whose process the daemon no longer
   * has (a replay of an earlier run) shows it ended.
   */
  settleProcesses(listed, unlistedEnded) {
    const byCall = new Map(listed.filter((info) => typeof info.toolCallId === "string").map((info) => [info.toolCallId, info]));
    for (const item of this.calls.values()) {
      if (!item.process) continue;
      const info = byCall.get(item.id);
      let next = null;
      if (info) next = { processId: info.processId, running: info.running, exitCode: info.exitCode ?? null, signal: info.signal ?? null };
      else if (unlistedEnded && item.process.running) next = { ...item.process, running: false, exitCode: null, signal: null };
      if (next && processState(next) !== processState(item.process)) {
        item.process = next;
        this.touch(item);
      }
    }
  }

  /** The plan shown above the composer (and a note in the transcript when it changes). */
  plan(entries) {
    this.onPlan(entries);
  }

  note(kind, text) {
    return this.add({ kind, text });
  }

  /** Calls left pending or running when a turn ended did not finish. */
  closeOpenCalls() {
    for (const item of this.calls.values()) {
      if (item.status === "pending" || item.status === "in_progress") this.call(item.id, { status: "failed" });
    }
  }
}

const STATUS_LABEL = { pending: "pending", in_progress: "running", completed: "done", failed: "failed" };

function itemNode(item) {
  switch (item.kind) {
    case "user":
      return el("div", { class: "message user", "data-kind": "user" }, richText(item.text));
    case "agent":
      return el("div", { class: "message agent", "data-kind": "agent" }, richText(item.text));
    case "thought":
      return el("details", { class: "thought", "data-kind": "thought" }, el("summary", { text: "Thinking" }), el("div", { class: "text plain", text: item.text }));
    case "tool":
      return toolNode(item);
    case "usage":
      return el("div", { class: "usage muted", text: item.text });
    case "error":
      return el("div", { class: "error", role: "alert", text: item.text });
    default:
      return el("div", { class: "notice muted", text: item.text });
  }
}

function toolNode(item) {
  const card = el("div", { class: `tool ${item.status}`, "data-kind": "tool", "data-status": item.status, "data-id": item.id });
  card.appendChild(
    el(
      "div",
      { class: "tool-head" },
      el("span", { class: "tool-status", text: STATUS_LABEL[item.status] ?? item.status }),
      el("span", { class: "tool-kind", text: item.toolKind }),
      el("span", { class: "tool-title", line: item.title }),
    ),
  );
  if (item.process) {
    card.firstChild.appendChild(
      el("span", { class: "tool-process", "data-status": item.process.running ? "running" : "ended", line: `process ${item.process.processId} · ${processState(item.process)}` }),
    );
  }
  for (const diff of item.diffs) card.appendChild(diffView(diff.path, diff.oldText, diff.newText));
  if (item.subagent) card.appendChild(subagentNode(item.subagent));
  if (item.patch) card.appendChild(patchView(item.patch));
  if (item.plan) card.appendChild(planList(item.plan));
  if (item.output) {
    if (item.dropped) card.appendChild(el("div", { class: "muted", text: `[... ${item.dropped} earlier characters not shown ...]` }));
    const lines = item.output.replace(/\s+$/, "").split("\n");
    const long = lines.length > OUTPUT_LINES && !item.expanded;
    // A process's output is read from its end (the latest lines); any other from its start.
    const tail = Boolean(item.process);
    const kept = tail ? lines.slice(-OUTPUT_LINES) : lines.slice(0, OUTPUT_LINES);
    const more = long ? el("button", { class: "link", type: "button", text: `Show all ${lines.length} lines` }) : null;
    more?.addEventListener("click", () => {
      item.expanded = true;
      const node = toolNode(item);
      item.node.replaceWith(node);
      item.node = node;
    });
    if (more && tail) card.appendChild(more);
    card.appendChild(el("pre", { class: "tool-output", text: (long ? kept : lines).join("\n") }));
    if (more && !tail) card.appendChild(more);
  }
  return card;
}

/** A subagent's block under its `task` call: who, its latest activity, and a way to open it. */
function subagentNode(subagent) {
  const open = el("button", { type: "button", class: "link small", "data-kind": "open-child", title: "Open the subagent's own session", text: "Open its session" });
  open.addEventListener("click", () => {
    location.hash = `#/s/cody/${subagent.sessionId}`;
  });
  const label = `Subagent ${subagent.agent}${subagent.background ? " (background)" : ""}`;
  return el(
    "div",
    { class: "subagent", "data-kind": "subagent", "data-id": subagent.sessionId },
    el("div", { class: "subagent-head" }, el("span", { class: "subagent-name", line: label }), open),
    subagent.activity.length ? el("ol", { class: "subagent-activity" }, ...subagent.activity.map((line) => el("li", { line }))) : null,
  );
}

export function planList(entries) {
  return el(
    "ol",
    { class: "plan-list" },
    ...entries.map((entry) => el("li", { class: `plan-entry ${entry.status}`, "data-status": entry.status, text: entry.content })),
  );
}
