/**
 * Text from the daemon made inert before VS Code shows it (the same rule as cody-client's
 * inert.py and the Neovim plugin's cody.inert).
 *
 * Nearly everything the extension shows comes from the model, a tool, a file or a session
 * file. The webview only ever sets `textContent` (no HTML), but a browser still acts on some
 * characters: bidi controls reorder what a line shows (a command can read as another), and C0
 * controls are invisible; the modal approval dialog, quick picks, the diff editor's title and
 * the log channel are no different, and a newline in a title or label makes a line of its own.
 *
 * Invariants: `inert(text)` leaves no C0 control but `\n` and `\t`, no DEL, no C1 control, no
 * bidi control (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), no line or paragraph
 * separator (U+2028, U+2029) and no lone surrogate: each is shown by a visible stand-in (the
 * control pictures U+2400-U+241F for C0, `␛` for ESC, `␡` for DEL, `<U+XXXX>` for the rest);
 * `\r\n` becomes `\n`. `oneLine(text)` also shows `\n` and `\t` (`␊`, `␉`). Both are
 * idempotent. `inertDeep(value)` applies `inert` to every string inside a JSON-like value (the
 * chat's view model goes through it whole: chat/view.ts).
 */

// eslint-disable-next-line no-control-regex
const MULTI_LINE = /\r\n|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// eslint-disable-next-line no-control-regex
const ONE_LINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function standIn(match: string): string {
  if (match === "\r\n") return "\n";
  const code = match.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return "\u2421";
  return `<U+${code.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/** `text` with every character a terminal or a browser acts on shown instead (newlines and tabs kept). */
export function inert(text: string): string {
  return text.replace(MULTI_LINE, standIn);
}

/** `text` inert and on one line: newlines and tabs are shown (`␊`, `␉`) as well. */
export function oneLine(text: string): string {
  return text.replace(ONE_LINE, standIn);
}

/** `value` with `inert` applied to every string in it (arrays and plain objects walked). */
export function inertDeep<T>(value: T): T {
  if (typeof value === "string") return inert(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => inertDeep(item)) as T;
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, inertDeep(item)])) as T;
  }
  return value;
}

/** A label for a quick pick, which draws `$(name)` as an icon: one inert line, icons shown as typed. */
export function pickLabel(text: string): string {
  return oneLine(text).replace(/\$\(/g, "\\$(");
}
