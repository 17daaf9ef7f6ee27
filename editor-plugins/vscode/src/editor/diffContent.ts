/**
 * In-memory documents for the approval diff preview: `cody-diff:` URIs whose text is the
 * old and the new content of a proposed edit, shown with the built-in `vscode.diff`.
 *
 * Invariant: a document lives only while its approval is open (`DiffPreview.dispose`).
 */

import * as vscode from "vscode";

import { oneLine } from "../inert";

export interface DiffPreviewHandle {
  left: vscode.Uri;
  right: vscode.Uri;
  title: string;
  dispose(): void;
}

export class DiffContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  static readonly scheme = "cody-diff";
  private readonly documents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  private counter = 0;
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.documents.get(uri.toString()) ?? "";
  }

  /** Register the two sides of an edit to `path` (absolute). */
  register(path: string, oldText: string | null, newText: string): DiffPreviewHandle {
    const id = String(++this.counter);
    // keep the file's path so the editor picks the language from its extension
    const left = vscode.Uri.from({ scheme: DiffContentProvider.scheme, path, query: `side=old&id=${id}` });
    const right = vscode.Uri.from({ scheme: DiffContentProvider.scheme, path, query: `side=new&id=${id}` });
    this.documents.set(left.toString(), oldText ?? "");
    this.documents.set(right.toString(), newText);
    const name = oneLine(path.split(/[\\/]/).pop() ?? path);
    const title = `${name} ${oldText === null ? "(new file) " : ""}↔ Cody's proposed change`;
    return {
      left,
      right,
      title,
      dispose: () => {
        this.documents.delete(left.toString());
        this.documents.delete(right.toString());
      },
    };
  }

  dispose(): void {
    this.documents.clear();
    this.changed.dispose();
  }
}

/** Open the diff editor for a registered preview. */
export async function showDiff(preview: DiffPreviewHandle): Promise<void> {
  await vscode.commands.executeCommand("vscode.diff", preview.left, preview.right, preview.title, {
    preview: true,
    preserveFocus: true,
  } satisfies vscode.TextDocumentShowOptions);
}

/** Close the diff editor tabs of a preview, if still open. */
export async function closeDiff(preview: DiffPreviewHandle): Promise<void> {
  const tabs = vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === preview.right.toString());
  if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
}
