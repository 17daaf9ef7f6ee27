/**
 * The chat webview view: renders the controller's state (through `toViewModel`) and turns
 * the webview's messages into commands.
 *
 * Invariant: state is posted at most every `FRAME_MS` while a reply streams, and always
 * once more after the last change.
 */

import * as vscode from "vscode";

import type { ChatController } from "../chat/controller";
import { parseWebviewMessage, toViewModel } from "../chat/view";
import type { HostMessage, WebviewMessage } from "../chat/view-model";
import { chatHtml, makeNonce } from "../webview/html";

const FRAME_MS = 40;

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = "cody.chat";
  private view: vscode.WebviewView | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly disposables: { dispose(): unknown }[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: ChatController,
    private readonly onMessage: (message: WebviewMessage) => void,
  ) {
    this.disposables.push(
      controller.onDidChange(() => {
        this.schedule();
      }),
    );
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const webviewRoot = vscode.Uri.joinPath(this.extensionUri, "out", "browser");
    const mediaRoot = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [webviewRoot, mediaRoot] };
    view.webview.html = chatHtml({
      cspSource: view.webview.cspSource,
      nonce: makeNonce(),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(webviewRoot, "webview-ui", "main.js")).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(mediaRoot, "chat.css")).toString(),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((raw: unknown) => {
        const message = parseWebviewMessage(raw);
        if (!message) return;
        if (message.type === "ready") this.post();
        else this.onMessage(message);
      }),
      view.onDidChangeVisibility(() => {
        if (view.visible) this.post();
      }),
      view.onDidDispose(() => {
        this.view = undefined;
      }),
    );
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.post();
    }, FRAME_MS);
  }

  private post(): void {
    if (!this.view?.visible) return;
    const message: HostMessage = { type: "state", view: toViewModel(this.controller.state) };
    void this.view.webview.postMessage(message);
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const disposable of this.disposables) disposable.dispose();
  }
}
