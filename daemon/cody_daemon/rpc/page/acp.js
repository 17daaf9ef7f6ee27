// ACP `session/update`s into the transcript and the session's state (live turns, and the
// replay `session/load` sends for a Cody session).

function blockText(block) {
  if (!block) return "";
  if (block.type === "text") return block.text ?? "";
  if (block.type === "resource_link") return `[${block.name ?? block.uri ?? "resource"}]`;
  if (block.type === "resource") return block.resource?.text ?? "[resource]";
  return `[${block.type}]`;
}

function toolFields(update) {
  const change = {
    title: update.title,
    toolKind: update.kind,
    status: update.status,
    input: update.rawInput,
  };
  if (Array.isArray(update.content)) {
    const texts = [];
    const diffs = [];
    for (const entry of update.content) {
      if (entry.type === "diff") diffs.push({ path: entry.path, oldText: entry.oldText ?? null, newText: entry.newText ?? "" });
      else if (entry.type === "content") texts.push(blockText(entry.content));
      else if (entry.type === "terminal") texts.push("[terminal output]");
    }
    change.output = texts.join("\n");
    change.diffs = diffs;
  }
  return change;
}

/**
 * Apply one update; `state` is the open session's (title, modes, configOptions, usage).
 * Returns what changed for the header: "config", "mode", "title", "usage" or null.
 */
export function applyUpdate(transcript, state, update) {
  switch (update.sessionUpdate) {
    case "user_message_chunk":
      transcript.text("user", blockText(update.content), update.messageId);
      return null;
    case "agent_message_chunk":
      transcript.text("agent", blockText(update.content), update.messageId);
      return null;
    case "agent_thought_chunk":
      transcript.text("thought", blockText(update.content), update.messageId);
      return null;
    case "tool_call":
    case "tool_call_update":
      transcript.call(update.toolCallId, toolFields(update));
      return null;
    case "plan":
      transcript.plan(update.entries ?? []);
      return null;
    case "usage_update":
      state.usage = { used: update.used, size: update.size, cost: update.cost ?? state.usage?.cost ?? null };
      return "usage";
    case "config_option_update":
      state.configOptions = update.configOptions ?? [];
      return "config";
    case "current_mode_update":
      if (state.modes) state.modes = { ...state.modes, currentModeId: update.currentModeId };
      return "mode";
    case "session_info_update": {
      const compaction = update._meta?.cody?.compaction;
      if (compaction) transcript.note("notice", `The conversation was compacted (${compaction.reason}): the model now sees a summary of the earlier part.`);
      if (typeof update.title === "string") {
        state.title = update.title;
        return "title";
      }
      return null;
    }
    default:
      return null; // e.g. available_commands_update: nothing to show
  }
}
