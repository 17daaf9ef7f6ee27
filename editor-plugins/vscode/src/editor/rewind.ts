/**
 * `Cody: Rewind…` and `Cody: Undo Last Turn`: go back to a checkpoint (one is taken at every
 * turn: the workspace's files, also what commands changed, and the conversation).
 *
 * Rewind: a quick pick of the checkpoints (newest first: turn, prompt, time, the files it
 * added, modified or deleted), then what to restore (files and conversation, files only, the
 * conversation only; a Codex or Claude Code session's conversation is its CLI's: files only).
 * Files someone else changed since the checkpoint are conflicts: a modal dialog lists them and
 * they are overwritten only with "Overwrite". Editors of restored files reload from disk
 * (VS Code's file watcher); an editor with unsaved changes keeps them, and the user is told.
 * Everything shown comes from the daemon: one inert line each (`pickLabel`, `oneLine`).
 */

import * as vscode from "vscode";

import type { ChatController } from "../chat/controller";
import { oneLine, pickLabel } from "../inert";
import type { CheckpointInfo, RestoreWhat } from "../protocol/types";

const MARKS = { added: "A", modified: "M", deleted: "D" } as const;
const RESTORES: { restore: RestoreWhat; label: string }[] = [
  { restore: "both", label: "Files and conversation" },
  { restore: "files", label: "Files only (the conversation stays)" },
  { restore: "conversation", label: "Conversation only (the files stay)" },
];

interface CheckpointItem extends vscode.QuickPickItem {
  checkpoint: CheckpointInfo;
}

interface RestoreItem extends vscode.QuickPickItem {
  restore: RestoreWhat;
}

export function checkpointItem(checkpoint: CheckpointInfo): CheckpointItem {
  const head = checkpoint.turn ? `turn ${String(checkpoint.turn)}` : "rewind";
  const files = checkpoint.files.slice(0, 6).map((file) => `${MARKS[file.change]} ${file.path}`);
  if (checkpoint.files.length > 6) files.push(`+${String(checkpoint.files.length - 6)} more`);
  const detail = files.length > 0 ? files.join(", ") : checkpoint.restorable === false ? "files not restorable" : "no file changes";
  const gone = checkpoint.inConversation === false ? " (not in the conversation)" : "";
  return {
    label: pickLabel(`${head} · ${checkpoint.prompt}${gone}`),
    description: checkpoint.time ? new Date(checkpoint.time).toLocaleString() : "",
    detail: pickLabel(detail),
    checkpoint,
  };
}

function isNative(chat: ChatController): boolean {
  const backend = chat.state.session?.configOptions.find((option) => option.id === "backend")?.currentValue;
  return backend === undefined || backend === "native";
}

/** `cody.rewind` (pick) and `cody.undo` (the last turn). */
export async function rewindCommand(chat: ChatController, undo: boolean): Promise<void> {
  if (!chat.state.session) {
    void vscode.window.showInformationMessage("Cody: no session yet, nothing to rewind.");
    return;
  }
  const checkpoints = await chat.checkpoints();
  let target: CheckpointInfo | undefined;
  let restore: RestoreWhat = isNative(chat) ? "both" : "files";
  if (undo) {
    target = checkpoints.find((c) => c.reason !== "rewind" && c.inConversation !== false);
    if (!target) {
      void vscode.window.showInformationMessage("Cody: nothing to undo, this conversation has no turn yet.");
      return;
    }
  } else {
    if (checkpoints.length === 0) {
      void vscode.window.showInformationMessage("Cody: no checkpoints yet (one is taken at every turn).");
      return;
    }
    const picked = await vscode.window.showQuickPick(checkpoints.map(checkpointItem), {
      title: "Rewind to before…",
      placeHolder: "Each turn's prompt and the files it changed",
      matchOnDetail: true,
    });
    if (!picked) return;
    target = picked.checkpoint;
    if (restore === "both") {
      const items: RestoreItem[] = RESTORES.map((r) => ({ label: r.label, restore: r.restore }));
      const what = await vscode.window.showQuickPick(items, { title: "Restore" });
      if (!what) return;
      restore = what.restore;
    }
  }
  const result = await chat.rewind(target, restore);
  if (!result) return;
  for (const stopped of result.stoppedProcesses ?? []) {
    void vscode.window.showInformationMessage(
      `Cody: stopped process ${String(stopped.processId)} (${oneLine(stopped.command)}): a turn this rewind undid started it.`,
    );
  }
  if (result.conflicts.length > 0) {
    const overwrite = await vscode.window.showWarningMessage(
      `${String(result.conflicts.length)} file(s) changed since the checkpoint by someone else were left as they are.`,
      { modal: true, detail: result.conflicts.map(oneLine).join("\n") },
      { title: "Overwrite" },
    );
    if (overwrite?.title === "Overwrite") {
      const forced = await chat.rewind(target, "files", true);
      if (forced) result.restored.push(...forced.restored);
    }
  }
  warnUnsaved(chat, result.restored);
}

/** Editors of restored files with unsaved changes keep them: say so (the rest reload). */
function warnUnsaved(chat: ChatController, restored: string[]): void {
  const cwd = chat.state.session?.cwd;
  const documents = (vscode.workspace as { textDocuments?: readonly vscode.TextDocument[] }).textDocuments ?? [];
  if (!cwd) return;
  const paths = new Set(restored.map((path) => vscode.Uri.file(`${cwd}/${path}`).fsPath));
  for (const document of documents) {
    if (document.isDirty && paths.has(document.uri.fsPath)) {
      void vscode.window.showWarningMessage(`Cody restored ${oneLine(document.uri.fsPath)} on disk, but its editor has unsaved changes (kept).`);
    }
  }
}
