// Unified messages (`_cody/history/read`, `_cody/session/history`: docs/history.md) into the
// transcript: a Codex, Claude Code or Cody session's full replay with Claude Code's tool
// vocabulary (Bash, Edit, Write, TodoWrite, ...).

const KINDS = {
  Bash: "execute",
  Read: "read",
  Write: "edit",
  Edit: "edit",
  MultiEdit: "edit",
  LS: "search",
  Glob: "search",
  Grep: "search",
  WebSearch: "fetch",
  WebFetch: "fetch",
  TodoWrite: "think",
};

function str(value) {
  return typeof value === "string" ? value : "";
}

/** The call's title, kind and what to show of its input (a diff, a patch, a plan). */
function describe(name, input) {
  const args = input && typeof input === "object" ? input : {};
  const change = { toolKind: KINDS[name] ?? "other", title: name, input: args };
  switch (name) {
    case "Bash":
      change.title = `$ ${str(args.command)}`;
      break;
    case "Read":
    case "LS":
      change.title = `${name} ${str(args.file_path) || str(args.path)}`;
      break;
    case "Glob":
    case "Grep":
      change.title = `${name} ${str(args.pattern)}${args.path ? ` in ${str(args.path)}` : ""}`;
      break;
    case "WebSearch":
      change.title = `Search ${str(args.query)}`;
      break;
    case "WebFetch":
      change.title = `Fetch ${str(args.url)}`;
      break;
    case "Write":
      change.title = `Write ${str(args.file_path)}`;
      change.diffs = [{ path: str(args.file_path), oldText: null, newText: str(args.content) }];
      break;
    case "Edit":
      if (typeof args.patch === "string") {
        change.title = "Edit (patch)";
        change.patch = args.patch;
      } else {
        change.title = `Edit ${str(args.file_path)}`;
        change.diffs = [{ path: str(args.file_path), oldText: str(args.old_string), newText: str(args.new_string) }];
      }
      break;
    case "MultiEdit":
      change.title = `Edit ${str(args.file_path)}`;
      change.diffs = (Array.isArray(args.edits) ? args.edits : []).map((edit) => ({ path: str(args.file_path), oldText: str(edit?.old_string), newText: str(edit?.new_string) }));
      break;
    case "TodoWrite":
      change.title = "Plan";
      change.plan = (Array.isArray(args.todos) ? args.todos : []).map((todo) => ({ content: str(todo?.content), status: str(todo?.status) || "pending" }));
      break;
    default:
      change.output = JSON.stringify(args, null, 2);
  }
  return change;
}

function resultText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((block) => (block?.type === "text" ? str(block.text) : `[${str(block?.type) || "block"}]`)).join("\n");
}

function usageText(usage, model) {
  const parts = [];
  if (model) parts.push(model);
  if (usage) {
    parts.push(`${(usage.input_tokens ?? 0).toLocaleString()} in`);
    if (usage.cached_input_tokens) parts.push(`${usage.cached_input_tokens.toLocaleString()} cached`);
    parts.push(`${(usage.output_tokens ?? 0).toLocaleString()} out`);
    if (usage.reasoning_tokens) parts.push(`${usage.reasoning_tokens.toLocaleString()} reasoning`);
  }
  return parts.join(" · ");
}

/** Append one page of unified messages; `options.meta`: show injected context too. */
export function addMessages(transcript, messages, options = {}) {
  for (const message of messages) {
    if ((message.isMeta || message.isSidechain) && !options.meta) continue;
    if (message.compaction) {
      transcript.note("notice", message.role === "system" ? "The conversation was compacted here." : "Summary of the earlier conversation (compaction).");
      if (message.role === "system") continue;
    }
    for (const block of message.content ?? []) {
      switch (block.type) {
        case "text":
          if (message.role === "system") transcript.note("notice", block.text);
          else transcript.text(message.role === "user" ? "user" : "agent", block.text, message.id ?? undefined);
          break;
        case "thinking":
          transcript.text("thought", block.thinking, message.id ?? undefined);
          break;
        case "tool_use": {
          const item = transcript.call(block.id, { ...describe(block.name, block.input), status: "in_progress" });
          if (item.plan) transcript.plan(item.plan);
          break;
        }
        case "tool_result": {
          const existing = transcript.calls.get(block.tool_use_id);
          const output = resultText(block.content);
          const keepInputView = existing && (existing.diffs.length || existing.patch || existing.plan);
          transcript.call(block.tool_use_id, {
            status: block.is_error ? "failed" : "completed",
            output: keepInputView && !block.is_error ? output.slice(0, 2000) : output,
          });
          break;
        }
        case "image":
          transcript.text(message.role === "user" ? "user" : "agent", "[image]", message.id ?? undefined);
          break;
        default:
          break;
      }
    }
    if (message.usage && message.role === "assistant") transcript.note("usage", usageText(message.usage, message.model));
  }
}
