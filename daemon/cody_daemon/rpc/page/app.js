// Cody in the browser: the page's entry point (docs/web.md).
//
// The token comes in the address' fragment (`#token=...`, which the browser never sends to
// the server); it is kept in this tab's sessionStorage and removed from the address bar. The
// page's WebSocket is `ws://<this host>/rpc?token=...`; without a token, or when the daemon
// refuses it, the page says so and does nothing else.
//
// Routes (the fragment): `#/` the history, `#/s/<agent>/<session id>` a session.
// Keys: `/` search, `n` new session, Esc back to the list (or stop a running turn from the
// prompt box), 1-4 answer an approval, Enter sends (Shift+Enter: a new line).
// The page answers the daemon's `session/request_permission` and `_cody/mcp/elicit`.

import { Rpc } from "./rpc.js";
import { byId, el, oneLine, replace } from "./dom.js";
import { HistoryList } from "./history.js";
import { SessionView } from "./session.js";
import { Transcript } from "./transcript.js";

const VERSION = "0.1.0";

function takeToken() {
  const match = /(?:^#|&)token=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem("cody-token", match[1]);
    history.replaceState(null, "", `${location.pathname}#/`);
  }
  return sessionStorage.getItem("cody-token");
}

function showGate(message) {
  const gate = byId("gate");
  replace(gate, el("h1", { text: "Cody" }), el("p", { text: message }), el("p", { class: "muted", text: "Run `cody-client web` in a terminal: it opens this page with its token." }));
  gate.hidden = false;
  byId("main").hidden = true;
}

function setConnection(text, ok) {
  const chip = byId("connection");
  chip.textContent = text;
  chip.dataset.status = ok ? "ok" : "down";
}

/** Ask for a directory (a dialog with a text field); null when dismissed. */
function askDirectory(title, initial, note) {
  const dialog = byId("ask");
  const input = el("input", { type: "text", value: initial ?? "", "aria-label": "Directory", spellcheck: "false", autocomplete: "off" });
  const ok = el("button", { type: "button", class: "primary", text: "OK" });
  const cancel = el("button", { type: "button", class: "secondary", text: "Cancel" });
  const error = el("div", { class: "error", hidden: true });
  replace(dialog, el("h2", { text: title }), note ? el("p", { class: "muted", text: note }) : null, input, error, el("div", { class: "dialog-buttons" }, cancel, ok));
  return new Promise((resolve) => {
    const done = (value) => {
      dialog.close();
      resolve(value);
    };
    const submit = () => {
      const value = input.value.trim();
      if (!value.startsWith("/")) {
        error.textContent = "Give an absolute directory (it starts with /).";
        error.hidden = false;
        return;
      }
      done(value);
    };
    ok.addEventListener("click", submit);
    cancel.addEventListener("click", () => done(null));
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        submit();
      }
    });
    dialog.addEventListener("cancel", () => resolve(null), { once: true });
    dialog.showModal();
    input.focus();
    input.select();
  });
}

async function main() {
  const token = takeToken();
  if (!token) {
    showGate("This page needs its token: open the address `cody-client web` prints.");
    return;
  }
  const rpc = new Rpc(`ws://${location.host}/rpc?token=${encodeURIComponent(token)}`);
  try {
    await rpc.open();
  } catch {
    sessionStorage.removeItem("cody-token");
    showGate("The daemon refused this page (a wrong or old token?), or it is not running.");
    return;
  }
  setConnection("connected", true);
  rpc.onClose = () => {
    setConnection("disconnected: reload the page once the daemon runs again", false);
    byId("main").dataset.disconnected = "true";
  };
  const init = await rpc.request("initialize", {
    protocolVersion: 1,
    clientInfo: { name: "cody-web", title: "Cody in the browser", version: VERSION },
    // `appendOutput`: live command output as increments (a background process's output keeps
    // continuing the call that started it; transcript.js appends and bounds it).
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, _meta: { cody: { appendOutput: true } } },
  });

  const main = byId("main");
  const refs = {
    main,
    title: byId("session-title"),
    meta: byId("session-meta"),
    config: byId("config"),
    extras: byId("extras"),
    plan: byId("plan"),
    approval: byId("approval"),
    elicit: byId("elicit"),
    composer: byId("composer"),
    prompt: byId("prompt"),
    send: byId("send"),
    cancel: byId("cancel"),
    continueButton: byId("continue"),
  };
  const transcript = new Transcript(byId("transcript"));
  const history = new HistoryList(
    rpc,
    { search: byId("search"), agent: byId("agent-filter"), project: byId("project-filter"), list: byId("session-list"), more: byId("more"), status: byId("list-status") },
    (info) => navigate(info.agent, info.sessionId),
  );
  const view = new SessionView(rpc, refs, transcript, {
    opened: (info) => {
      history.setActive(`${info.agent}/${info.sessionId}`);
      history.refresh();
      history.lastOpened = info;
      location.hash = `#/s/${info.agent}/${info.sessionId}`;
    },
    turnEnded: () => history.refresh(),
  });
  for (const name of init?._meta?.cody?.extensions ?? []) view.extensions.add(name);

  function navigate(agent, sessionId) {
    location.hash = `#/s/${agent}/${sessionId}`;
  }

  async function route() {
    const match = /^#\/s\/(cody|codex|claude)\/([A-Za-z0-9_.:-]+)$/.exec(location.hash);
    if (!match) {
      main.dataset.view = "list";
      history.setActive(null);
      return;
    }
    const [, agent, sessionId] = match;
    main.dataset.view = "session";
    if (view.state?.agent === agent && view.state?.sessionId === sessionId) return;
    history.setActive(`${agent}/${sessionId}`);
    const info = history.find(agent, sessionId) ?? (history.lastOpened?.sessionId === sessionId ? history.lastOpened : { agent, sessionId });
    try {
      await view.open(info);
    } catch (error) {
      transcript.note("error", `Could not open the session: ${oneLine(error.message)}`);
      transcript.render();
    }
  }

  refs.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = refs.prompt.value.trim();
    if (!text) return;
    refs.prompt.value = "";
    view.prompt(text);
  });
  refs.prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      refs.composer.requestSubmit();
    } else if (event.key === "Escape" && view.busy) {
      event.preventDefault();
      view.cancel();
    }
  });
  refs.cancel.addEventListener("click", () => view.cancel());
  byId("back").addEventListener("click", () => {
    location.hash = "#/";
  });
  byId("refresh").addEventListener("click", () => history.refresh());
  refs.continueButton.addEventListener("click", async () => {
    const cwd = await askDirectory(
      "Continue in Cody",
      view.state?.info?.cwd ?? "",
      "The new Cody session works in this directory (its workspace for approvals and the sandbox). It is filled in from the session file: check it.",
    );
    if (!cwd) return;
    try {
      await view.continueIn(cwd);
    } catch (error) {
      transcript.note("error", `Could not continue the session: ${oneLine(error.message)}`);
      transcript.render();
    }
  });
  byId("new-session").addEventListener("click", () => newSession());

  async function newSession() {
    const cwd = await askDirectory("New session", history.refs.project.value || view.state?.info?.cwd || "", "The directory Cody works in.");
    if (!cwd) return;
    main.dataset.view = "session";
    try {
      await view.newSession(cwd);
    } catch (error) {
      transcript.note("error", `Could not start a session: ${oneLine(error.message)}`);
      transcript.render();
    }
  }

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement;
    if (event.ctrlKey || event.metaKey || event.altKey || byId("ask").open) return;
    if (!typing && view.approvalKey(event.key)) {
      event.preventDefault();
      return;
    }
    if (typing) return;
    if (event.key === "/") {
      event.preventDefault();
      main.dataset.view = "list";
      byId("search").focus();
    } else if (event.key === "n") {
      event.preventDefault();
      newSession();
    } else if (event.key === "Escape" && main.dataset.view === "session") {
      event.preventDefault();
      location.hash = "#/";
    }
  });

  window.addEventListener("hashchange", route);
  await history.refresh();
  await route();
  main.dataset.ready = "true";
}

main().catch((error) => {
  console.error(error);
  showGate(`The page failed: ${oneLine(error?.message ?? error)}`);
});
