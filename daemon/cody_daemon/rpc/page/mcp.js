// The open session's MCP servers (`_cody/mcp/status` notifications, docs/mcp.md): one chip
// per server with its state (starting, ready and its tool count, failed and why), shown in
// the session header's `#extras` place once a server reported.
//
// Invariants: statuses are kept per session id (a server may report before `session/new`
// answers), for the latest `KEPT_SESSIONS` sessions only; names and reasons are the
// configuration's and the server's text, shown through dom.js as one inert line.

import { el } from "./dom.js";

const KEPT_SESSIONS = 20;
const STATE_LABEL = { starting: "starting…", ready: "ready", failed: "failed" };

export class McpStatus {
  constructor() {
    this.sessions = new Map();
  }

  /** One `_cody/mcp/status` notification. */
  record(params) {
    if (!params || typeof params.sessionId !== "string" || typeof params.server !== "string") return;
    const servers = this.sessions.get(params.sessionId) ?? new Map();
    this.sessions.delete(params.sessionId);
    this.sessions.set(params.sessionId, servers);
    while (this.sessions.size > KEPT_SESSIONS) this.sessions.delete(this.sessions.keys().next().value);
    servers.set(params.server, { state: params.state, reason: params.reason ?? null, tools: params.tools ?? 0 });
  }

  /** The chips of `sessionId`'s servers, or null when none reported. */
  element(sessionId) {
    const servers = this.sessions.get(sessionId);
    if (!servers?.size) return null;
    const chips = [...servers].map(([name, status]) => {
      const tools = status.state === "ready" ? ` (${status.tools} tool${status.tools === 1 ? "" : "s"})` : "";
      return el("span", {
        class: "chip mcp-server",
        "data-id": name,
        "data-status": status.state === "ready" ? "ok" : status.state === "failed" ? "down" : "starting",
        title: status.reason ?? "",
        line: `MCP ${name}: ${STATE_LABEL[status.state] ?? status.state}${tools}`,
      });
    });
    return el("div", { class: "mcp-servers", "aria-live": "polite" }, ...chips);
  }
}
