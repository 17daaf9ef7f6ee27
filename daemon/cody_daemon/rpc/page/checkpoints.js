// Checkpoints and rewind in the page (docs/checkpoints.md): the open session's checkpoints,
// newest first, each with its prompt, time and files; a checkpoint's diff; a rewind of its
// files, its conversation or both, with what was restored, what was left as a conflict
// (overwritten only when asked: `force`), and the rewind's own checkpoint to undo it.
//
// Shown in the session header's `#extras` place (SessionView.renderExtras) only when the
// daemon lists `_cody/session/checkpoints` in `initialize`'s extensions. Every string from
// the daemon (prompts, paths, reasons) reaches the DOM through dom.js.

import { el, replace, when } from "./dom.js";
import { patchView } from "./diff.js";

const CHANGE_MARK = { added: "A", modified: "M", deleted: "D" };
const RESTORE_LABEL = { files: "Files", conversation: "Conversation", both: "Both" };
const FILES_SHOWN = 6;
const LISTED = 50;

/** `turn 3 · 10:04` or `rewind · 10:05` for a checkpoint. */
function heading(checkpoint) {
  const head = checkpoint.reason === "rewind" ? "rewind" : `turn ${checkpoint.turn ?? "?"}`;
  return [head, when(checkpoint.time)].filter(Boolean).join(" · ");
}

function filesSummary(checkpoint) {
  const files = checkpoint.files ?? [];
  if (!files.length) return checkpoint.restorable === false ? "files not restorable" : "no file changes";
  const shown = files.slice(0, FILES_SHOWN).map((file) => `${CHANGE_MARK[file.change] ?? "?"} ${file.path}`);
  const more = files.length - FILES_SHOWN;
  return shown.join(", ") + (more > 0 ? ` +${more} more` : "");
}

export class CheckpointsPanel {
  /**
   * `view` is the SessionView: its rpc, its open session (`sessionId`, `state.meta`), its
   * transcript (for errors) and `reload()` (the replay after a conversation rewind).
   */
  constructor(view) {
    this.view = view;
    this.open = false;
    this.sessionId = null;
    this.checkpoints = [];
    this.selected = null;
    this.diff = null;
    this.report = null;
    this.error = null;
    this.working = false;
    this.node = el("div", { class: "checkpoints" });
  }

  /** The panel for the session now open (a fresh one when the session changed). */
  element() {
    if (this.view.sessionId !== this.sessionId) {
      this.sessionId = this.view.sessionId;
      this.checkpoints = [];
      this.selected = this.diff = this.report = this.error = null;
      if (this.open) this.refresh();
    }
    this.render();
    return this.node;
  }

  /** Codex and Claude Code sessions keep their own conversation: only files rewind. */
  get native() {
    const backend = this.view.state?.meta?.backend;
    return !backend || backend === "native";
  }

  async toggle() {
    this.open = !this.open;
    this.render();
    if (this.open) await this.refresh();
  }

  /** List again (after a turn or a rewind) when the panel is open. */
  async refresh() {
    const sessionId = this.sessionId;
    if (!sessionId || !this.open) return;
    try {
      const result = await this.view.rpc.request("_cody/session/checkpoints", { sessionId });
      if (sessionId !== this.sessionId) return;
      this.checkpoints = result.checkpoints ?? [];
      this.error = null;
    } catch (error) {
      this.error = `Could not list the checkpoints: ${error.message}`;
    }
    this.render();
  }

  async showDiff(checkpoint) {
    const sessionId = this.sessionId;
    try {
      const result = await this.view.rpc.request("_cody/session/checkpointDiff", { sessionId, checkpointId: checkpoint.checkpointId });
      if (sessionId !== this.sessionId) return;
      this.diff = { checkpointId: checkpoint.checkpointId, text: result.diff ?? "", truncated: Boolean(result.truncated) };
    } catch (error) {
      this.error = `Could not show the diff: ${error.message}`;
    }
    this.render();
  }

  /** Rewind to before `checkpoint`; `force` also overwrites files changed since. */
  async rewind(checkpoint, restore, force = false) {
    const sessionId = this.sessionId;
    if (!sessionId || this.working) return;
    this.working = true;
    this.error = null;
    this.render();
    try {
      const result = await this.view.rpc.request("_cody/session/rewind", { sessionId, checkpointId: checkpoint.checkpointId, restore, force });
      if (sessionId !== this.sessionId) return;
      this.report = { checkpoint, restore, result };
      this.selected = null;
      this.diff = null;
      if (restore !== "files") await this.view.reload();
    } catch (error) {
      this.error = error.code === -32011 ? "The session is running a turn; wait or stop it, then rewind." : `Could not rewind: ${error.message}`;
    } finally {
      this.working = false;
    }
    await this.refresh();
  }

  /** The newest turn the conversation still holds: files and conversation (a backend: files). */
  async undo() {
    if (!this.open) {
      this.open = true;
      await this.refresh();
    }
    const last = this.checkpoints.find((checkpoint) => checkpoint.reason === "turn" && checkpoint.inConversation !== false);
    if (!last) {
      this.error = "Nothing to undo: this conversation has no turn yet.";
      this.render();
      return;
    }
    await this.rewind(last, this.native ? "both" : "files");
  }

  // -- rendering -------------------------------------------------------------------------

  render() {
    const toggle = el("button", { type: "button", class: "secondary small", id: "checkpoints-toggle", "aria-expanded": this.open ? "true" : "false", text: this.open ? "Hide checkpoints" : "Checkpoints" });
    toggle.addEventListener("click", () => this.toggle());
    const undo = el("button", { type: "button", class: "secondary small", id: "undo-turn", disabled: this.working || this.view.busy, title: "Undo the last turn: its file changes and its messages", text: "Undo last turn" });
    undo.addEventListener("click", () => this.undo());
    replace(
      this.node,
      el("div", { class: "checkpoint-bar" }, toggle, undo),
      this.open ? this.body() : null,
    );
  }

  body() {
    const parts = [];
    if (this.error) parts.push(el("div", { class: "error", role: "alert", text: this.error }));
    if (this.report) parts.push(this.reportNode());
    if (this.working) parts.push(el("div", { class: "muted", text: "Rewinding…" }));
    if (!this.checkpoints.length) parts.push(el("div", { class: "muted", text: "No checkpoints yet: one is taken at every turn." }));
    const list = el("ol", { class: "checkpoint-list", "aria-label": "Checkpoints" }, ...this.checkpoints.slice(0, LISTED).map((checkpoint) => this.row(checkpoint)));
    parts.push(list);
    return el("div", { class: "checkpoint-panel" }, ...parts);
  }

  row(checkpoint) {
    const selected = this.selected === checkpoint.checkpointId;
    const head = el(
      "button",
      { type: "button", class: "checkpoint-head link", "aria-expanded": selected ? "true" : "false" },
      el("span", { class: "checkpoint-when", line: heading(checkpoint) }),
      el("span", { class: "checkpoint-prompt", line: `“${checkpoint.prompt ?? ""}”` }),
      el("span", { class: "checkpoint-files muted", line: filesSummary(checkpoint) }),
      checkpoint.inConversation === false ? el("span", { class: "muted", text: " (not in the conversation)" }) : null,
    );
    head.addEventListener("click", () => {
      this.selected = selected ? null : checkpoint.checkpointId;
      this.diff = null;
      this.render();
    });
    return el("li", { class: "checkpoint", "data-id": checkpoint.checkpointId, "data-kind": checkpoint.reason ?? "turn" }, head, selected ? this.details(checkpoint) : null);
  }

  details(checkpoint) {
    const notes = [];
    if (checkpoint.error) notes.push(el("div", { class: "error", line: `No snapshot: ${checkpoint.error}` }));
    if (checkpoint.interrupted) notes.push(el("div", { class: "muted", text: "Its turn was interrupted (the daemon stopped): its changes count as someone else's." }));
    for (const item of (checkpoint.notCovered ?? []).slice(0, 10)) notes.push(el("div", { class: "muted", line: `Not covered: ${item.path} (${item.why})` }));
    const files = el("ul", { class: "checkpoint-file-list" }, ...(checkpoint.files ?? []).map((file) => el("li", { "data-kind": file.change, line: `${CHANGE_MARK[file.change] ?? "?"} ${file.path}` })));
    const diff = el("button", { type: "button", class: "secondary small", "data-kind": "diff", disabled: checkpoint.restorable === false, text: "Show diff" });
    diff.addEventListener("click", () => this.showDiff(checkpoint));
    const restores = this.native ? ["files", "conversation", "both"] : ["files"];
    const buttons = restores.map((restore) => {
      const needsFiles = restore !== "conversation";
      const button = el("button", {
        type: "button",
        class: restore === "both" ? "primary small" : "secondary small",
        "data-kind": restore,
        disabled: this.working || this.view.busy || (needsFiles && checkpoint.restorable === false),
        title: `Rewind to before this: ${restore === "both" ? "files and conversation" : restore}`,
        text: `Rewind ${RESTORE_LABEL[restore].toLowerCase()}`,
      });
      button.addEventListener("click", () => this.rewind(checkpoint, restore));
      return button;
    });
    const shown = this.diff && this.diff.checkpointId === checkpoint.checkpointId ? this.diffNode() : null;
    return el("div", { class: "checkpoint-details" }, ...notes, files, el("div", { class: "checkpoint-actions" }, diff, ...buttons), shown);
  }

  diffNode() {
    const { text, truncated } = this.diff;
    return el(
      "div",
      { class: "checkpoint-diff" },
      text ? patchView(text) : el("div", { class: "muted", text: "No changes." }),
      truncated ? el("div", { class: "muted", text: "The diff is longer: cut at 1 MiB." }) : null,
    );
  }

  reportNode() {
    const { checkpoint, restore, result } = this.report;
    const lines = [el("div", { class: "report-title", line: `Rewound to before ${heading(checkpoint)}: “${checkpoint.prompt ?? ""}”` })];
    if (restore !== "conversation") {
      const restored = result.restored ?? [];
      lines.push(
        restored.length
          ? el("div", { "data-kind": "restored", line: `Restored ${restored.length} file(s): ${restored.slice(0, 12).join(", ")}${restored.length > 12 ? ` and ${restored.length - 12} more` : ""}` })
          : el("div", { "data-kind": "restored", text: "No file needed restoring." }),
      );
    }
    if (restore !== "files") lines.push(el("div", { text: "The conversation continues from before that prompt." }));
    for (const stopped of result.stoppedProcesses ?? []) lines.push(el("div", { "data-kind": "stopped", line: `Stopped process ${stopped.processId} (${stopped.command}): a turn this rewind undid started it.` }));
    for (const failure of result.failed ?? []) lines.push(el("div", { class: "error", line: `Not restored: ${failure.path} (${failure.reason})` }));
    const conflicts = result.conflicts ?? [];
    if (conflicts.length) {
      const force = el("button", { type: "button", class: "primary small", id: "rewind-force", disabled: this.working, text: "Overwrite them too" });
      force.addEventListener("click", () => this.rewind(checkpoint, "files", true));
      lines.push(
        el(
          "div",
          { class: "conflicts", role: "alert" },
          el("div", { text: "Changed since by someone else, left as they are:" }),
          el("ul", { class: "conflict-list" }, ...conflicts.map((path) => el("li", { line: path }))),
          force,
        ),
      );
    }
    if (result.redoCheckpointId) {
      const redo = el("button", { type: "button", class: "secondary small", id: "rewind-undo", disabled: this.working, text: "Undo this rewind" });
      const undone = { checkpointId: result.redoCheckpointId, reason: "rewind", prompt: `the state before the rewind to ${heading(checkpoint)}`, time: "" };
      redo.addEventListener("click", () => this.rewind(undone, restore));
      lines.push(redo);
    }
    return el("div", { class: "rewind-report", "aria-live": "polite" }, ...lines);
  }
}
