/**
 * What the chat webview renders and the messages it exchanges with the extension.
 *
 * Invariant: types only (this file is also compiled into the webview bundle).
 */

export interface ViewToolCall {
  id: string;
  title: string;
  kind: string;
  status: "pending" | "in_progress" | "completed" | "failed";
  /** "running", "done", "failed", ... */
  statusLabel: string;
  preview: string;
  /** "… 12 more lines", or empty. */
  more: string;
  /** "allowed once", "rejected", ... or empty when no approval was asked. */
  decision: string;
  /** One line per file edit: "src/a.ts: 3 → 5 lines". */
  diffs: string[];
  /** A `task` call's child session: "explore · session 0193…", or empty. */
  subagent: string;
  /** What the child did, one line per tool call ("▸ List ."), nested under the call. */
  activity: string[];
}

export type ViewItem =
  | { type: "user" | "agent" | "thought" | "notice"; text: string }
  | { type: "tool"; call: ViewToolCall }
  | { type: "error"; message: string; detail: string };

export interface ChatViewModel {
  title: string;
  /** "Cody 0.1.0 · ready", "starting…", "stopped". */
  daemon: string;
  /** Short status chips: provider · model, mode, tokens, context, cost. */
  status: string[];
  busy: boolean;
  loading: boolean;
  items: ViewItem[];
  /** A banner while an approval dialog is open. */
  approval: { title: string; text: string } | null;
  /** Errors not shown in the transcript (e.g. a failed session list). */
  errors: { message: string; detail: string }[];
  plan: { content: string; status: string }[];
  mcp: string[];
  /** Files that go with the next message. */
  attachments: string[];
  /** Prompts waiting for the running turn. */
  queued: number;
}

/** Webview → extension. */
export type WebviewMessage =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  /** Tab while a turn runs: run the text after it. */
  | { type: "queue"; text: string }
  /** Files dropped on the chat (their `file:` URIs). */
  | { type: "addFiles"; uris: string[] }
  | { type: "cancel" }
  | { type: "newSession" }
  | { type: "sessions" }
  | { type: "showLog" }
  | { type: "dismissErrors" };

/** Extension → webview. */
export interface HostMessage {
  type: "state";
  view: ChatViewModel;
}
