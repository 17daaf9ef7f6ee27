/**
 * What an approval dialog says: the question, the detail (command and cwd, or the files an
 * edit changes; that it leaves the sandbox, and why), and one button per option the daemon
 * offers (`allow_project`'s name shows the rule it saves), plus "Stop Turn".
 *
 * Invariants: pure, no `vscode` import; the buttons are exactly the request's options; every
 * string is inert (src/inert.ts), the message and the buttons one line each, so the dialog
 * shows the command that would run (no bidi reordering, no hidden control characters).
 */

import { inert, oneLine } from "../inert";
import type { DiffToolCallContent, RequestPermissionParams } from "../protocol/types";
import { diffLabel } from "./view";

export interface ApprovalButton {
  title: string;
  /** Undefined for "Stop Turn" (answers `cancelled`). */
  optionId: string | undefined;
}

export interface ApprovalPrompt {
  message: string;
  detail: string;
  buttons: ApprovalButton[];
  diffs: DiffToolCallContent[];
}

export const STOP_TURN = "Stop Turn";

export function describeApproval(request: RequestPermissionParams): ApprovalPrompt {
  const call = request.toolCall;
  const texts: string[] = [];
  const diffs: DiffToolCallContent[] = [];
  for (const entry of call.content ?? []) {
    if (entry.type === "diff") diffs.push(entry);
    else if (entry.type === "content" && entry.content.type === "text") texts.push(entry.content.text);
  }
  const meta = request._meta?.cody;
  const outside = meta?.justification ? " outside the sandbox" : "";
  let message: string;
  if (call.kind === "execute") message = `Cody wants to run a command${outside}`;
  else if (diffs.length === 1 && diffs[0]) message = `Cody wants to change ${oneLine(baseName(diffs[0].path))}`;
  else if (diffs.length > 1) message = `Cody wants to change ${String(diffs.length)} files`;
  else message = `Cody wants to use ${oneLine(call.title)}`;

  const detail: string[] = [];
  if (texts.length > 0) detail.push(inert(texts.join("\n")));
  else if (diffs.length === 0) detail.push(oneLine(call.title));
  for (const diff of diffs) detail.push(diffLabel({ path: diff.path, oldText: diff.oldText ?? null, newText: diff.newText }));
  if (diffs.length > 0) detail.push("The proposed change is open in a diff editor.");
  if (meta?.justification) detail.push(`⚠ Outside the sandbox: full access to your files and the network.`);
  else if (meta?.sandboxed === false) detail.push("⚠ This would run WITHOUT a sandbox.");
  if (meta?.projectRules && meta.project) {
    detail.push(`"Always allow" in this project saves ${meta.projectRules.map(oneLine).join(", ")} for ${oneLine(meta.project)}.`);
  }

  const buttons: ApprovalButton[] = request.options.map((option) => ({ title: oneLine(option.name), optionId: option.optionId }));
  buttons.push({ title: STOP_TURN, optionId: undefined });
  return { message, detail: detail.join("\n\n"), buttons, diffs };
}

function baseName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}
