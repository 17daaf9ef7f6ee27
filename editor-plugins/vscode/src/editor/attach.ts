/**
 * "Add File to Cody Chat" and files dropped on the chat: each file (or the editor's
 * selection) becomes an attachment of the next message (`ChatController.attach`), sent as an
 * embedded resource with its `file:` URI.
 *
 * Invariants: only `file:` URIs are read (a drop is untrusted input); a file that is not
 * UTF-8 text, or larger than `MAX_BYTES`, is refused with a message, never sent half.
 */

import * as vscode from "vscode";

import type { Attachment, ChatController } from "../chat/controller";
import { oneLine } from "../inert";

export const MAX_BYTES = 256 * 1024;

/** Attach `uris`, or the active editor's selection (else its whole text) when there are none. */
export async function attachFiles(chat: ChatController, uris: readonly vscode.Uri[]): Promise<void> {
  if (uris.length === 0) {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage("Cody: open a file (or pick one in the Explorer) to add it to the chat.");
      return;
    }
    chat.attach(fromEditor(editor));
    return;
  }
  for (const uri of uris) {
    const attachment = await fromFile(uri);
    if (typeof attachment === "string") void vscode.window.showWarningMessage(`Cody: ${attachment}`);
    else chat.attach(attachment);
  }
}

function label(uri: vscode.Uri): string {
  return oneLine(vscode.workspace.asRelativePath(uri, false));
}

function fromEditor(editor: vscode.TextEditor): Attachment {
  const document = editor.document;
  const selection = editor.selection;
  if (selection.isEmpty) return { name: label(document.uri), uri: document.uri.toString(), text: document.getText() };
  const first = selection.start.line + 1;
  const last = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line : selection.end.line + 1;
  const range = new vscode.Range(first - 1, 0, last, 0);
  return {
    name: `${label(document.uri)}:${String(first)}-${String(last)}`,
    uri: `${document.uri.toString()}#L${String(first)}-L${String(last)}`,
    text: document.getText(range),
  };
}

/** The file as an attachment, or why it cannot be one. */
async function fromFile(uri: vscode.Uri): Promise<Attachment | string> {
  const name = label(uri);
  if (uri.scheme !== "file") return `${name}: only files on disk can be attached`;
  let bytes: Uint8Array;
  try {
    const stat = await vscode.workspace.fs.stat(uri);
    if (stat.type !== vscode.FileType.File) return `${name}: not a file`;
    if (stat.size > MAX_BYTES) return `${name}: ${String(stat.size)} bytes, more than the ${String(MAX_BYTES)} a chat attachment may have`;
    bytes = await vscode.workspace.fs.readFile(uri);
  } catch (error) {
    return `${name}: ${error instanceof Error ? oneLine(error.message) : "cannot be read"}`;
  }
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return { name, uri: uri.toString(), text };
  } catch {
    return `${name}: not UTF-8 text`;
  }
}
