// Line diffs for the page: an edit's old and new text as removed/added/kept lines, and a
// patch text (Codex's apply_patch, a unified diff) coloured by its line prefixes.

import { el } from "./dom.js";

const MAX_CELLS = 4_000_000;
const CONTEXT = 3;

/** [{op: " " | "-" | "+", text}] for `oldText` -> `newText` (a longest-common-subsequence diff). */
export function lineDiff(oldText, newText) {
  const a = oldText === null || oldText === undefined || oldText === "" ? [] : String(oldText).split("\n");
  const b = newText === null || newText === undefined || newText === "" ? [] : String(newText).split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const head = a.slice(0, start).map((text) => ({ op: " ", text }));
  const tail = a.slice(endA).map((text) => ({ op: " ", text }));
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  let middle;
  if (midA.length * midB.length > MAX_CELLS) {
    middle = [...midA.map((text) => ({ op: "-", text })), ...midB.map((text) => ({ op: "+", text }))];
  } else {
    middle = lcs(midA, midB);
  }
  return [...head, ...middle, ...tail];
}

function lcs(a, b) {
  const width = b.length + 1;
  const table = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * width + j] = a[i] === b[j] ? table[(i + 1) * width + j + 1] + 1 : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ op: " ", text: a[i] });
      i++;
      j++;
    } else if (table[(i + 1) * width + j] >= table[i * width + j + 1]) out.push({ op: "-", text: a[i++] });
    else out.push({ op: "+", text: b[j++] });
  }
  while (i < a.length) out.push({ op: "-", text: a[i++] });
  while (j < b.length) out.push({ op: "+", text: b[j++] });
  return out;
}

/** Changed lines with CONTEXT lines around them; long unchanged runs become "⋯". */
function hunks(lines) {
  const keep = new Array(lines.length).fill(false);
  lines.forEach((line, index) => {
    if (line.op === " ") return;
    for (let k = Math.max(0, index - CONTEXT); k <= Math.min(lines.length - 1, index + CONTEXT); k++) keep[k] = true;
  });
  const out = [];
  let skipped = 0;
  lines.forEach((line, index) => {
    if (keep[index]) {
      if (skipped) out.push({ op: "…", text: `⋯ ${skipped} unchanged line${skipped === 1 ? "" : "s"}` });
      skipped = 0;
      out.push(line);
    } else skipped++;
  });
  if (skipped) out.push({ op: "…", text: `⋯ ${skipped} unchanged line${skipped === 1 ? "" : "s"}` });
  return out;
}

/** A diff block: the file's path and its changed lines. */
export function diffView(path, oldText, newText) {
  const lines = hunks(lineDiff(oldText, newText));
  const added = lines.filter((line) => line.op === "+").length;
  const removed = lines.filter((line) => line.op === "-").length;
  const label = oldText === null || oldText === undefined ? "new file" : `+${added} −${removed}`;
  return el(
    "div",
    { class: "diff" },
    el("div", { class: "diff-head" }, el("span", { class: "diff-path", line: path }), el("span", { class: "muted", text: label })),
    el("pre", { class: "diff-body" }, ...lines.map(diffLine)),
  );
}

function diffLine(line) {
  const kind = line.op === "+" ? "add" : line.op === "-" ? "del" : line.op === "…" ? "skip" : "ctx";
  const prefix = line.op === "…" ? "" : `${line.op} `;
  return el("span", { class: `line ${kind}`, text: `${prefix}${line.text}\n` });
}

/** A patch (apply_patch or unified diff text) with its lines coloured by prefix. */
export function patchView(patch) {
  const lines = String(patch ?? "").split("\n");
  return el(
    "pre",
    { class: "diff-body patch" },
    ...lines.map((text) => {
      const kind = /^\*\*\* (Add|Update|Delete|Move)|^(\+\+\+|---) |^@@/.test(text)
        ? "hunk"
        : text.startsWith("+")
          ? "add"
          : text.startsWith("-")
            ? "del"
            : "ctx";
      return el("span", { class: `line ${kind}`, text: `${text}\n` });
    }),
  );
}
