// A session's transcript: user and agent text, thoughts, tool calls (with diffs and output),
// plans, usage and notices, rendered into one container. Both sources feed it: ACP
// `session/update`s (live turns and a Cody session's replay: acp.js) and unified messages
// (Codex and Claude Code sessions: unified.js).
//
// Invariants: one item per tool call id (later updates change it in place); text chunks of
// the same kind and message extend one item; rendering is batched per animation frame and
// keeps the view at the bottom only when it was there.

import { el, replace, richText } from "./dom.js";
import { diffView, patchView } from "./diff.js";

const OUTPUT_LINES = 40;

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

  /** A tool call's new state (fields absent from `change` stay as they were). */
  call(id, change) {
    let item = this.calls.get(id);
    if (!item) {
      item = this.add({ kind: "tool", id, title: id, toolKind: "other", status: "pending", input: null, output: "", diffs: [], patch: null, plan: null, expanded: false });
      this.calls.set(id, item);
    }
    for (const [key, value] of Object.entries(change)) if (value !== undefined && value !== null) item[key] = value;
    this.touch(item);
    return item;
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
  for (const diff of item.diffs) card.appendChild(diffView(diff.path, diff.oldText, diff.newText));
  if (item.patch) card.appendChild(patchView(item.patch));
  if (item.plan) card.appendChild(planList(item.plan));
  if (item.output) {
    const lines = item.output.replace(/\s+$/, "").split("\n");
    const long = lines.length > OUTPUT_LINES && !item.expanded;
    const shown = long ? lines.slice(0, OUTPUT_LINES).join("\n") : lines.join("\n");
    card.appendChild(el("pre", { class: "tool-output", text: shown }));
    if (long) {
      const more = el("button", { class: "link", type: "button", text: `Show all ${lines.length} lines` });
      more.addEventListener("click", () => {
        item.expanded = true;
        const node = toolNode(item);
        item.node.replaceWith(node);
        item.node = node;
      });
      card.appendChild(more);
    }
  }
  return card;
}

export function planList(entries) {
  return el(
    "ol",
    { class: "plan-list" },
    ...entries.map((entry) => el("li", { class: `plan-entry ${entry.status}`, "data-status": entry.status, text: entry.content })),
  );
}
