// The unified history: every Codex, Claude Code and Cody session the daemon can read
// (`_cody/history/list`), searched and filtered by agent and project, newest first.
// Keyboard: `/` focuses the search, ↑/↓ move through the list, Enter opens.

import { el, oneLine, projectName, replace, when } from "./dom.js";

const AGENT_LABEL = { cody: "Cody", codex: "Codex", claude: "Claude Code" };

export class HistoryList {
  constructor(rpc, refs, onOpen) {
    this.rpc = rpc;
    this.refs = refs;
    this.onOpen = onOpen;
    this.sessions = [];
    this.cursor = null;
    this.projects = new Set();
    this.selected = -1;
    this.generation = 0;
    this.activeId = null;
    let timer = 0;
    refs.search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.refresh(), 200);
    });
    refs.agent.addEventListener("change", () => this.refresh());
    refs.project.addEventListener("change", () => this.refresh());
    refs.more.addEventListener("click", () => this.load(false));
    refs.list.addEventListener("keydown", (event) => this.key(event));
    refs.search.addEventListener("keydown", (event) => {
      if (event.key === "ArrowDown" && this.sessions.length) {
        event.preventDefault();
        this.select(0);
      }
    });
  }

  params() {
    const params = {};
    if (this.refs.agent.value) params.agent = this.refs.agent.value;
    if (this.refs.project.value) params.cwd = this.refs.project.value;
    const query = this.refs.search.value.trim();
    if (query) params.query = query;
    return params;
  }

  refresh() {
    return this.load(true);
  }

  async load(fresh) {
    const generation = fresh ? ++this.generation : this.generation;
    const params = this.params();
    if (!fresh && this.cursor) params.cursor = this.cursor;
    this.refs.status.textContent = "Loading…";
    let result;
    try {
      result = await this.rpc.request("_cody/history/list", params);
    } catch (error) {
      if (generation === this.generation) this.refs.status.textContent = `Could not list the sessions: ${oneLine(error.message)}`;
      return;
    }
    if (generation !== this.generation) return; // a newer search answered first
    if (fresh) {
      this.sessions = [];
      this.selected = -1;
    }
    this.sessions.push(...(result.sessions ?? []));
    this.cursor = result.nextCursor ?? null;
    for (const session of result.sessions ?? []) if (session.cwd) this.projects.add(session.cwd);
    this.render();
  }

  renderProjects() {
    const select = this.refs.project;
    const current = select.value;
    const sorted = [...this.projects].sort((a, b) => projectName(a).localeCompare(projectName(b)));
    replace(select, el("option", { value: "", text: "All projects" }), ...sorted.map((cwd) => el("option", { value: cwd, title: cwd, line: projectName(cwd) })));
    select.value = current;
  }

  render() {
    this.renderProjects();
    const { list, more, status } = this.refs;
    replace(list, ...this.sessions.map((session, index) => this.row(session, index)));
    more.hidden = !this.cursor;
    status.textContent = this.sessions.length ? "" : "No sessions match.";
  }

  row(session, index) {
    const title = session.title || "(no prompt yet)";
    const active = `${session.agent}/${session.sessionId}` === this.activeId;
    const node = el(
      "li",
      {
        class: `session-row${active ? " active" : ""}`,
        role: "option",
        tabindex: index === Math.max(this.selected, 0) ? "0" : "-1",
        "aria-selected": index === this.selected ? "true" : "false",
        "data-agent": session.agent,
        "data-id": session.sessionId,
      },
      el("div", { class: "row-title", line: title }),
      el(
        "div",
        { class: "row-meta" },
        el("span", { class: `agent-label ${session.agent}`, text: AGENT_LABEL[session.agent] ?? session.agent }),
        el("span", { class: "project", title: session.cwd ?? "", line: projectName(session.cwd) }),
        el("span", { class: "muted", text: when(session.updatedAt ?? session.startedAt) }),
        el("span", { class: "muted", text: `${session.messageCountExact ? "" : "~"}${session.messageCount} msgs` }),
      ),
    );
    node.addEventListener("click", () => this.onOpen(session));
    return node;
  }

  select(index) {
    const rows = [...this.refs.list.children];
    if (!rows.length) return;
    this.selected = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach((row, i) => {
      row.setAttribute("aria-selected", i === this.selected ? "true" : "false");
      row.setAttribute("tabindex", i === this.selected ? "0" : "-1");
    });
    rows[this.selected].focus();
  }

  key(event) {
    if (event.key === "ArrowDown") this.select(this.selected + 1);
    else if (event.key === "ArrowUp") {
      if (this.selected <= 0) this.refs.search.focus();
      else this.select(this.selected - 1);
    } else if (event.key === "Enter" && this.selected >= 0) this.onOpen(this.sessions[this.selected]);
    else return;
    event.preventDefault();
  }

  /** Mark the open session's row (`agent/id`, or null). */
  setActive(key) {
    this.activeId = key;
    for (const row of this.refs.list.children) {
      row.classList.toggle("active", `${row.getAttribute("data-agent")}/${row.getAttribute("data-id")}` === key);
    }
  }

  find(agent, sessionId) {
    return this.sessions.find((session) => session.agent === agent && session.sessionId === sessionId) ?? null;
  }
}

export function agentLabel(agent) {
  return AGENT_LABEL[agent] ?? agent;
}

