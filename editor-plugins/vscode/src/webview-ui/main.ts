/**
 * The chat webview script: renders the `ChatViewModel` the extension posts and sends the
 * prompt box and buttons back as `WebviewMessage`s.
 *
 * Invariant: conversation text only ever reaches the DOM through `textContent` (no
 * `innerHTML`), so nothing a model or a tool prints can run in the webview.
 */

import type { ChatViewModel, HostMessage, ViewItem, ViewToolCall, WebviewMessage } from "../chat/view-model";

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();

/** Whether a turn runs (Enter then steers it, Tab queues). */
let busy = false;

function byId(id: string): HTMLElement {
  const element = document.getElementById(id);
  if (!element) throw new Error(`missing #${id}`);
  return element;
}

function button(id: string): HTMLButtonElement {
  const element = byId(id);
  if (!(element instanceof HTMLButtonElement)) throw new Error(`#${id} is not a button`);
  return element;
}

function textArea(id: string): HTMLTextAreaElement {
  const element = byId(id);
  if (!(element instanceof HTMLTextAreaElement)) throw new Error(`#${id} is not a textarea`);
  return element;
}

function isHostMessage(value: unknown): value is HostMessage {
  return typeof value === "object" && value !== null && (value as { type?: unknown }).type === "state";
}

function el(tag: string, className?: string, text?: string): HTMLElement {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

/** Text with ``` fences as code blocks and `inline code`, built with DOM nodes only. */
function richText(text: string): HTMLElement {
  const root = el("div", "text");
  const parts = text.split(/```/);
  parts.forEach((part, index) => {
    if (index % 2 === 1) {
      const body = part.replace(/^[^\n]*\n/, (line) => (/^\w*\n$/.test(line) ? "" : line));
      const pre = el("pre");
      pre.appendChild(el("code", undefined, body.replace(/\n$/, "")));
      root.appendChild(pre);
      return;
    }
    const paragraph = el("p");
    part.split(/(`[^`\n]+`)/).forEach((span) => {
      if (span.startsWith("`") && span.endsWith("`") && span.length > 2) paragraph.appendChild(el("code", undefined, span.slice(1, -1)));
      else if (span) paragraph.appendChild(document.createTextNode(span));
    });
    if (paragraph.childNodes.length > 0) root.appendChild(paragraph);
  });
  return root;
}

function toolCard(call: ViewToolCall): HTMLElement {
  const card = el("div", `tool ${call.status}`);
  const head = el("div", "tool-head");
  head.appendChild(el("span", "tool-status", call.statusLabel));
  head.appendChild(el("span", "tool-kind", call.kind));
  head.appendChild(el("span", "tool-title", call.title));
  if (call.decision) head.appendChild(el("span", "tool-decision", call.decision));
  card.appendChild(head);
  if (call.subagent) {
    const nested = el("div", "tool-subagent");
    nested.appendChild(el("div", "muted", `↳ ${call.subagent}`));
    for (const line of call.activity) nested.appendChild(el("div", "tool-activity", line));
    card.appendChild(nested);
  }
  for (const diff of call.diffs) card.appendChild(el("div", "tool-diff", diff));
  if (call.preview) {
    const pre = el("pre", "tool-output");
    pre.textContent = call.preview;
    card.appendChild(pre);
  }
  if (call.more) card.appendChild(el("div", "muted", call.more));
  return card;
}

function itemNode(item: ViewItem): HTMLElement {
  switch (item.type) {
    case "user": {
      const node = el("div", "message user");
      node.appendChild(richText(item.text));
      return node;
    }
    case "agent": {
      const node = el("div", "message agent");
      node.appendChild(richText(item.text));
      return node;
    }
    case "thought": {
      const details = el("details", "thought");
      details.appendChild(el("summary", undefined, "Thinking"));
      details.appendChild(el("div", "text", item.text));
      return details;
    }
    case "notice":
      return el("div", "notice", item.text);
    case "tool":
      return toolCard(item.call);
    case "error": {
      const node = el("div", "error");
      node.appendChild(el("div", "error-message", item.message));
      if (item.detail) node.appendChild(el("pre", "error-detail", item.detail));
      return node;
    }
  }
}

function render(view: ChatViewModel): void {
  byId("title").textContent = view.title;
  byId("daemon").textContent = view.daemon;
  const status = byId("status");
  status.replaceChildren(...view.status.map((chip) => el("span", "chip", chip)), ...view.mcp.map((line) => el("span", "chip mcp", `MCP ${line}`)));

  const errors = byId("errors");
  errors.replaceChildren();
  if (view.errors.length > 0) {
    for (const error of view.errors.slice(-3)) {
      const node = el("div", "error");
      node.appendChild(el("div", "error-message", error.message));
      if (error.detail) node.appendChild(el("pre", "error-detail", error.detail));
      errors.appendChild(node);
    }
    const dismiss = el("button", "secondary", "Dismiss");
    dismiss.addEventListener("click", () => {
      vscode.postMessage({ type: "dismissErrors" });
    });
    errors.appendChild(dismiss);
  }

  const transcript = byId("transcript");
  const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  transcript.replaceChildren(...view.items.map(itemNode));
  if (view.loading) transcript.appendChild(el("div", "notice", "Loading the session…"));
  if (view.items.length === 0 && !view.loading) {
    transcript.appendChild(el("div", "notice", "Ask Cody something. Commands and edits ask for your approval first."));
  }

  const approval = byId("approval");
  approval.hidden = view.approval === null;
  approval.replaceChildren();
  if (view.approval) {
    approval.appendChild(el("div", "approval-title", view.approval.title));
    approval.appendChild(el("pre", "approval-text", view.approval.text));
  }

  const plan = byId("plan");
  plan.hidden = view.plan.length === 0;
  plan.replaceChildren(...view.plan.map((entry) => el("div", `plan-entry ${entry.status}`, entry.content)));
  // last, once the approval and plan boxes have taken their room: scrolling before they
  // appear left the newest lines hidden under them, and the chat stopped following
  if (atBottom) transcript.scrollTop = transcript.scrollHeight;

  button("cancel").disabled = !view.busy;
  // while a turn runs, Send steers it (the model reads the message at its next step)
  button("send").textContent = view.busy ? "Steer" : "Send";
  busy = view.busy;
  byId("attachments").replaceChildren(...view.attachments.map((name) => el("span", "chip", `📎 ${name}`)));
}

function send(type: "prompt" | "queue" = "prompt"): void {
  const prompt = textArea("prompt");
  const text = prompt.value.trim();
  if (!text) return;
  vscode.postMessage({ type, text });
  prompt.value = "";
  vscode.setState({ draft: "" });
}

window.addEventListener("message", (event: MessageEvent<unknown>) => {
  if (isHostMessage(event.data)) render(event.data.view);
});

byId("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
const promptBox = textArea("prompt");
promptBox.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  } else if (event.key === "Tab" && !event.shiftKey && busy && promptBox.value.trim()) {
    event.preventDefault(); // queue it after the running turn (else Tab moves the focus)
    send("queue");
  }
});
// Files dragged from the Explorer (hold Shift to drop into a view) are attached.
const composer = byId("composer");
composer.addEventListener("dragover", (event) => {
  event.preventDefault();
  composer.classList.add("dropping");
});
composer.addEventListener("dragleave", () => {
  composer.classList.remove("dropping");
});
composer.addEventListener("drop", (event) => {
  event.preventDefault();
  composer.classList.remove("dropping");
  const data = event.dataTransfer;
  const list = data?.getData("application/vnd.code.uri-list") || data?.getData("text/uri-list") || "";
  const uris = list.split(/\r?\n/).map((line) => line.trim()).filter((line) => line.startsWith("file:"));
  if (uris.length > 0) vscode.postMessage({ type: "addFiles", uris });
});
promptBox.addEventListener("input", () => {
  vscode.setState({ draft: promptBox.value });
});
const saved = vscode.getState();
if (typeof saved === "object" && saved !== null && typeof (saved as { draft?: unknown }).draft === "string") {
  promptBox.value = (saved as { draft: string }).draft;
}
byId("cancel").addEventListener("click", () => {
  vscode.postMessage({ type: "cancel" });
});
byId("new").addEventListener("click", () => {
  vscode.postMessage({ type: "newSession" });
});
byId("sessions").addEventListener("click", () => {
  vscode.postMessage({ type: "sessions" });
});
byId("log").addEventListener("click", () => {
  vscode.postMessage({ type: "showLog" });
});
vscode.postMessage({ type: "ready" });
