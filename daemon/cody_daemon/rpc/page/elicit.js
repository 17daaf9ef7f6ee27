// MCP elicitation in the page (docs/mcp.md "Elicitation"): an MCP server of the session asks
// the user for input during the page's turn (`_cody/mcp/elicit`, a request from the daemon).
//
// - Form mode: one field per property of `requestedSchema` (MCP's restricted JSON Schema:
//   flat strings with an optional format, numbers, integers, booleans, single-select enums
//   (`enum` with `enumNames`, or `oneOf` of `{const, title}`) and multi-select string arrays
//   (`items.enum` or `items.anyOf`)), prefilled with the defaults; Accept checks required
//   fields, ranges and formats before it answers `{action: "accept", content}`.
// - URL mode: the URL is shown as text (never opened by the page) with Done / Decline.
// - Decline and Cancel answer `decline` and `cancel`; a request the daemon withdraws (its
//   timeout, a cancelled turn) disappears with a note.
//
// Every string of the request (message, titles, descriptions, enum labels, the URL) is the
// server's text: it reaches the DOM through dom.js only.

import { el, replace } from "./dom.js";

const SAID = { accept: "answered", decline: "declined", cancel: "dismissed" };

/** The choices of a single-select property: `[{value, label}]`, or null when it has none. */
function choices(prop) {
  if (Array.isArray(prop.oneOf)) return prop.oneOf.filter((option) => option && "const" in option).map((option) => ({ value: String(option.const), label: String(option.title ?? option.const) }));
  if (Array.isArray(prop.enum)) return prop.enum.map((value, index) => ({ value: String(value), label: String(prop.enumNames?.[index] ?? value) }));
  return null;
}

/** The choices of a multi-select (string array) property, or null. */
function multiChoices(prop) {
  if (prop.type !== "array" || !prop.items) return null;
  const items = prop.items;
  if (Array.isArray(items.anyOf ?? items.oneOf)) return (items.anyOf ?? items.oneOf).filter((option) => option && "const" in option).map((option) => ({ value: String(option.const), label: String(option.title ?? option.const) }));
  if (Array.isArray(items.enum)) return items.enum.map((value) => ({ value: String(value), label: String(value) }));
  return null;
}

const INPUT_TYPE = { email: "email", uri: "url", date: "date" };
// (`date-time` stays a text field: a browser's datetime-local value has no seconds or zone.)

/** One field: its element and `read()`, which returns `{value}` or `{error}` (value undefined: left out). */
function field(name, prop, required) {
  const label = String(prop.title ?? name);
  const id = `elicit-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const description = prop.description ? el("div", { class: "muted field-description", text: prop.description }) : null;
  const head = el("label", { for: id, class: "field-label", line: required ? `${label} *` : label });
  const multi = multiChoices(prop);
  if (multi) {
    const defaults = new Set(Array.isArray(prop.default) ? prop.default.map(String) : []);
    const boxes = multi.map((choice) => el("input", { type: "checkbox", name, value: choice.value, checked: defaults.has(choice.value) }));
    const node = el(
      "fieldset",
      { class: "field", "data-field": name },
      el("legend", { class: "field-label", line: required ? `${label} *` : label }),
      description,
      ...multi.map((choice, index) => el("label", { class: "choice" }, boxes[index], el("span", { line: choice.label }))),
    );
    const read = () => {
      const value = boxes.filter((box) => box.checked).map((box) => box.value);
      if (Number.isInteger(prop.minItems) && value.length < prop.minItems && (required || value.length)) return { error: `${label}: choose at least ${prop.minItems}.` };
      if (Number.isInteger(prop.maxItems) && value.length > prop.maxItems) return { error: `${label}: choose at most ${prop.maxItems}.` };
      return { value: value.length || required ? value : undefined };
    };
    return { node, read };
  }
  if (prop.type === "boolean") {
    const box = el("input", { type: "checkbox", id, name, checked: prop.default === true });
    const node = el("div", { class: "field", "data-field": name }, el("label", { class: "choice" }, box, el("span", { line: label })), description);
    return { node, read: () => ({ value: box.checked }) };
  }
  const single = choices(prop);
  if (single) {
    const select = el("select", { id, name }, required ? null : el("option", { value: "", text: "—" }), ...single.map((choice) => el("option", { value: choice.value, line: choice.label })));
    select.value = prop.default !== undefined ? String(prop.default) : required && single.length ? single[0].value : "";
    const node = el("div", { class: "field", "data-field": name }, head, description, select);
    return { node, read: () => ({ value: select.value === "" ? undefined : select.value }) };
  }
  const numeric = prop.type === "number" || prop.type === "integer";
  const input = el("input", {
    id,
    name,
    type: numeric ? "number" : (INPUT_TYPE[prop.format] ?? "text"),
    step: numeric ? (prop.type === "integer" ? "1" : "any") : null,
    min: numeric && typeof prop.minimum === "number" ? String(prop.minimum) : null,
    max: numeric && typeof prop.maximum === "number" ? String(prop.maximum) : null,
    value: prop.default !== undefined && typeof prop.default !== "object" ? String(prop.default) : "",
    autocomplete: "off",
    spellcheck: "false",
  });
  const node = el("div", { class: "field", "data-field": name }, head, description, input);
  const read = () => {
    const text = input.value.trim();
    if (!text) return required ? { error: `${label} is required.` } : { value: undefined };
    if (!input.checkValidity()) return { error: `${label}: ${input.validationMessage}` };
    if (numeric) {
      const number = Number(text);
      if (!Number.isFinite(number) || (prop.type === "integer" && !Number.isInteger(number))) return { error: `${label}: give ${prop.type === "integer" ? "a whole number" : "a number"}.` };
      return { value: number };
    }
    if (Number.isInteger(prop.minLength) && text.length < prop.minLength) return { error: `${label}: at least ${prop.minLength} characters.` };
    if (Number.isInteger(prop.maxLength) && text.length > prop.maxLength) return { error: `${label}: at most ${prop.maxLength} characters.` };
    return { value: text };
  };
  return { node, read };
}

/**
 * The box for one elicitation request; `answer(result)` is called once with the answer
 * (`{action, content?}`). `params` is the request's params, `asker` names who asks.
 */
export function elicitationBox(params, asker, answer) {
  const error = el("div", { class: "error", role: "alert", hidden: true });
  const schema = params.requestedSchema && typeof params.requestedSchema === "object" ? params.requestedSchema : { properties: {} };
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = params.mode === "form" ? Object.entries(schema.properties ?? {}).filter(([, prop]) => prop && typeof prop === "object").map(([name, prop]) => ({ name, ...field(name, prop, required.has(name)) })) : [];
  const accept = el("button", { type: "submit", class: "primary", "data-option": "accept", text: params.mode === "url" ? "Done" : "Submit" });
  const decline = el("button", { type: "button", class: "secondary", "data-option": "decline", text: "Decline" });
  const cancel = el("button", { type: "button", class: "secondary", "data-option": "cancel", text: "Cancel" });
  const form = el(
    "form",
    { class: "elicit-form" },
    el("div", { class: "approval-title" }, el("strong", { text: "Asks for input: " }), el("span", { line: asker })),
    el("pre", { class: "approval-text", text: params.message ?? "" }),
    params.mode === "url" ? el("div", { class: "elicit-url" }, el("span", { class: "muted", text: "Open this address yourself, finish there, then press Done: " }), el("code", { line: params.url ?? "" })) : null,
    ...fields.map((entry) => entry.node),
    error,
    el("div", { class: "approval-options" }, accept, decline, cancel),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (params.mode === "url") {
      answer({ action: "accept" });
      return;
    }
    const content = Object.create(null); // a property named `__proto__` stays a field
    for (const entry of fields) {
      const read = entry.read();
      if (read.error) {
        replace(error, read.error);
        error.hidden = false;
        entry.node.querySelector("input, select")?.focus();
        return;
      }
      if (read.value !== undefined) content[entry.name] = read.value;
    }
    answer({ action: "accept", content });
  });
  decline.addEventListener("click", () => answer({ action: "decline" }));
  cancel.addEventListener("click", () => answer({ action: "cancel" }));
  return form;
}

/**
 * The page's open elicitations, oldest first, the first shown in `box`: each answered once
 * (by the user, or withdrawn by the daemon), with a note in the transcript either way.
 */
export class Elicitations {
  constructor(box, transcript, openSessionId, focusPrompt) {
    this.box = box;
    this.transcript = transcript;
    this.openSessionId = openSessionId;
    this.focusPrompt = focusPrompt;
    this.entries = [];
  }

  /** The `_cody/mcp/elicit` request handler: resolves with the answer. */
  ask(params, signal) {
    return new Promise((resolve) => {
      const entry = { params, resolve, done: false };
      this.entries.push(entry);
      signal.addEventListener("abort", () => {
        if (entry.done) return;
        entry.done = true;
        this.entries = this.entries.filter((other) => other !== entry);
        this.transcript.note("notice", `The MCP server ${params.server ?? "?"} withdrew its question (it timed out or the turn was cancelled).`);
        this.render();
      });
      this.render();
    });
  }

  answer(entry, result) {
    if (entry.done) return;
    entry.done = true;
    this.entries = this.entries.filter((other) => other !== entry);
    entry.resolve(result);
    this.transcript.note("notice", `You ${SAID[result.action]} the MCP server ${entry.params.server ?? "?"}'s question.`);
    this.render();
    this.focusPrompt();
  }

  render() {
    const entry = this.entries[0];
    this.box.hidden = !entry;
    if (!entry) {
      replace(this.box);
      return;
    }
    const params = entry.params;
    const elsewhere = params.sessionId !== this.openSessionId() ? ` (session ${params.sessionId})` : "";
    replace(this.box, elicitationBox(params, `the MCP server ${params.server ?? "?"}${elsewhere}`, (result) => this.answer(entry, result)));
    (this.box.querySelector("input, select") ?? this.box).focus();
  }
}
