/**
 * Approvals in VS Code's own UI: for an edit, the diff editor opens first; then a modal
 * warning dialog shows the command and cwd (or the files) with one button per option.
 *
 * Invariant: the dialog's answer is ignored once the daemon has withdrawn the request (a
 * modal cannot be closed from code); dismissing the dialog stops the turn.
 */

import * as vscode from "vscode";

import { describeApproval } from "../chat/approval";
import { oneLine } from "../inert";
import type { ApprovalUi } from "../chat/controller";
import type { PermissionOutcome } from "../protocol/types";
import { closeDiff, showDiff, type DiffContentProvider, type DiffPreviewHandle } from "./diffContent";
import type { CodyLog } from "./log";

interface ApprovalItem extends vscode.MessageItem {
  optionId: string | undefined;
}

export function createApprovalUi(diffs: DiffContentProvider, log: CodyLog): ApprovalUi {
  return async (request, signal): Promise<PermissionOutcome> => {
    const prompt = describeApproval(request);
    const previews: DiffPreviewHandle[] = prompt.diffs.map((diff) => diffs.register(diff.path, diff.oldText ?? null, diff.newText));
    try {
      for (const preview of previews) await showDiff(preview);
      const items: ApprovalItem[] = prompt.buttons.map((button) => ({
        title: button.title,
        optionId: button.optionId,
        isCloseAffordance: button.optionId === undefined,
      }));
      const title = oneLine(request.toolCall.title);
      log.info(`approval asked: ${title}`);
      if (!vscode.window.state.focused) void vscode.window.showInformationMessage(`Cody needs your approval: ${title}`);
      const choice = await vscode.window.showWarningMessage(prompt.message, { modal: true, detail: prompt.detail }, ...items);
      if (signal.aborted) {
        void vscode.window.showInformationMessage("Cody withdrew that approval request (the turn was cancelled or the request timed out).");
        return { outcome: "cancelled" };
      }
      const optionId = choice?.optionId;
      log.info(`approval answered: ${title} -> ${optionId ?? "stop turn"}`);
      return optionId ? { outcome: "selected", optionId } : { outcome: "cancelled" };
    } finally {
      for (const preview of previews) {
        await closeDiff(preview).catch(() => undefined);
        preview.dispose();
      }
    }
  };
}
