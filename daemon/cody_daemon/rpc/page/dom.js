// The page's only way to make DOM: elements, attributes from a fixed list, and text through
// `textContent` (docs/web.md, "What the page shows").
//
// Invariants: nothing from the daemon, a model, a tool or a session file is ever parsed as
// HTML (no innerHTML/outerHTML/insertAdjacentHTML/document.write anywhere in the page:
// tests/unit/test_web_page.py scans for them, and the Content-Security-Policy's Trusted Types
// make such a write throw). Text is made inert first: C0/C1 controls, bidi overrides and lone
// surrogates are shown as visible stand-ins (the rule of cody-client's inert.py and the VS
// Code extension's inert.ts), so a command cannot read as another one.

// eslint-disable-next-line no-control-regex
const MULTI_LINE = /\r\n|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// eslint-disable-next-line no-control-regex
const ONE_LINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function standIn(match) {
  if (match === "\r\n") return "\n";
  const code = match.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return "\u2421";
  return `<U+${code.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/** `text` with every control and bidi character shown instead (newlines and tabs kept). */
export function inert(text) {
  return String(text ?? "").replace(MULTI_LINE, standIn);
}

/** `text` inert and on one line (newlines and tabs shown as ␊ ␉). */
export function oneLine(text) {
  return String(text ?? "").replace(ONE_LINE, standIn);
}

const ATTRIBUTES = new Set([
  "id", "class", "title", "type", "value", "placeholder", "role", "tabindex", "hidden",
  "disabled", "for", "name", "autocomplete", "spellcheck", "rows", "aria-label",
  "aria-live", "aria-expanded", "aria-current", "aria-selected", "aria-keyshortcuts",
  "data-id", "data-kind", "data-status", "data-agent", "data-option", "data-field", "enterkeyhint",
  "checked", "min", "max", "step",
]);

/**
 * `<tag>` with `props` (`class`, `text`, listed attributes, `on<event>` handlers) and
 * children (nodes or strings, each string as a text node).
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = inert(value);
    else if (key === "line") node.textContent = oneLine(value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (ATTRIBUTES.has(key)) node.setAttribute(key, value === true ? "" : oneLine(value));
    else throw new Error(`el: attribute ${key} is not allowed`);
  }
  append(node, ...children);
  return node;
}

/** Append children: nodes as they are, strings as inert text nodes. */
export function append(node, ...children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === "string" ? document.createTextNode(inert(child)) : child);
  }
  return node;
}

/** Replace every child of `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, ...children);
}

export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`missing #${id}`);
  return node;
}

/** Text with ``` fences as code blocks and `inline code`, built from DOM nodes only. */
export function richText(text, className = "text") {
  const root = el("div", { class: className });
  const parts = String(text ?? "").split(/```/);
  parts.forEach((part, index) => {
    if (index % 2 === 1) {
      const body = part.replace(/^[^\n]*\n/, (line) => (/^[\w+-]*\n$/.test(line) ? "" : line));
      root.appendChild(el("pre", { class: "code" }, el("code", { text: body.replace(/\n$/, "") })));
      return;
    }
    if (!part.trim()) return;
    const paragraph = el("p");
    for (const span of part.split(/(`[^`\n]+`)/)) {
      if (span.length > 2 && span.startsWith("`") && span.endsWith("`")) paragraph.appendChild(el("code", { text: span.slice(1, -1) }));
      else if (span) paragraph.appendChild(document.createTextNode(inert(span)));
    }
    root.appendChild(paragraph);
  });
  return root;
}

/** A short local date and time for an ISO timestamp ("" when absent or unreadable). */
export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const now = new Date();
  const sameDay = date.toDateString() === now.toDateString();
  return sameDay
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { year: date.getFullYear() === now.getFullYear() ? undefined : "numeric", month: "short", day: "numeric" });
}

/** The last one or two parts of a directory path, for a compact project label. */
export function projectName(cwd) {
  if (!cwd) return "";
  const parts = String(cwd).split("/").filter(Boolean);
  return parts.length === 0 ? "/" : parts.slice(-2).join("/");
}
