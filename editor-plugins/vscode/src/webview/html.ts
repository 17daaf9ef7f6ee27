/**
 * The chat webview's HTML shell: a strict Content-Security-Policy where the only script is
 * the extension's own module, allowed by a per-load nonce.
 *
 * Invariant: pure, no `vscode` import; nothing from the conversation is ever put into this
 * HTML (the webview script renders it with `textContent`).
 */

import { randomBytes } from "node:crypto";

export interface HtmlOptions {
  /** `webview.cspSource` */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function makeNonce(): string {
  return randomBytes(18).toString("base64").replace(/[^A-Za-z0-9]/g, "");
}

function attr(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

export function chatHtml(options: HtmlOptions): string {
  const csp = contentSecurityPolicy(options.cspSource, options.nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  <link rel="stylesheet" href="${attr(options.styleUri)}">
  <title>Cody</title>
</head>
<body>
  <header id="header">
    <div id="title">Cody</div>
    <div id="daemon" class="muted"></div>
    <div id="status"></div>
  </header>
  <div id="errors"></div>
  <main id="transcript" aria-live="polite"></main>
  <div id="approval" hidden></div>
  <div id="plan" hidden></div>
  <form id="composer">
    <div id="attachments"></div>
    <textarea id="prompt" rows="3" placeholder="Ask Cody… (Enter to send, Shift+Enter for a new line; while a turn runs: Enter steers it, Tab queues; drop files here to attach them)" aria-label="Prompt"></textarea>
    <div id="buttons">
      <button type="submit" id="send">Send</button>
      <button type="button" id="cancel" class="secondary" disabled>Cancel</button>
      <button type="button" id="new" class="secondary">New</button>
      <button type="button" id="sessions" class="secondary">Sessions…</button>
      <button type="button" id="log" class="secondary">Log</button>
    </div>
  </form>
  <script type="module" nonce="${attr(options.nonce)}" src="${attr(options.scriptUri)}"></script>
</body>
</html>
`;
}
