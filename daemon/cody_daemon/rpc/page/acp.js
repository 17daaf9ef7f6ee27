// ACP `session/update`s into the transcript and the session's state (live turns, and the
// replay `session/load` sends for a Cody session).

function blockText(block) {
  if (!block) return "";
  if (block.type === "text") return block.text ?? "";
  if (block.type === "resource_link") return `[${block.name ?? block.uri ?? "resource"}]`;
  if (block.type === "resource") return block.resource?.text ?? "[resource]";
  return `[${block.type}]`;
}

/** A call's process (`rawOutput {processId, running, exitCode?, signal?}`), or undefined. */
function processOf(raw) {
  if (!raw || typeof raw !== "object" || !Number.isInteger(raw.processId) || typeof raw.running !== "boolean") return undefined;
  return { processId: raw.processId, running: raw.running, exitCode: raw.exitCode ?? null, signal: raw.signal ?? null };
}

/** A `task` call's child session, or undefined: live, `_meta.cody {childSessionId, agent,
 * background}`; replayed, its result's `rawOutput {sessionId, agent, stopReason}`. */
function childOf(meta, raw) {
  const cody = meta?.cody;
  if (cody && typeof cody.childSessionId === "string") {
    return { sessionId: cody.childSessionId, agent: typeof cody.agent === "string" ? cody.agent : "subagent", background: cody.background === true };
  }
  if (raw && typeof raw === "object" && typeof raw.sessionId === "string" && typeof raw.agent === "string" && "stopReason" in raw) {
    return { sessionId: raw.sessionId, agent: raw.agent, background: false };
  }
  return undefined;
}

function toolFields(update) {
  const change = {
    title: update.title,
    toolKind: update.kind,
    status: update.status,
    input: update.rawInput,
    process: processOf(update.rawOutput),
    subagent: childOf(update._meta, update.rawOutput),
  };
  if (Array.isArray(update.content)) {
    const texts = [];
    const diffs = [];
    for (const entry of update.content) {
      if (entry.type === "diff") diffs.push({ path: entry.path, oldText: entry.oldText ?? null, newText: entry.newText ?? "" });
      else if (entry.type === "content") texts.push(blockText(entry.content));
      else if (entry.type === "terminal") texts.push("[terminal output]");
    }
    // Live output (the page opts in to `appendOutput`): an increment continues what the
    // call shows, also after the call completed (a background process keeps printing).
    if (update._meta?.cody?.appendOutput === true && diffs.length === 0) change.append = texts.join("");
    else {
      change.output = texts.join("\n");
      change.diffs = diffs;
    }
  }
  return change;
}

/** One line of a child session's activity for its parent's `task` call (null: nothing to show). */
export function childActivity(update, titles) {
  if (update.sessionUpdate === "tool_call") {
    titles.set(update.toolCallId, update.title ?? update.toolCallId);
    return `▸ ${update.title ?? update.toolCallId}`;
  }
  if (update.sessionUpdate === "tool_call_update" && update.status === "failed") return `✗ ${update.title ?? titles.get(update.toolCallId) ?? update.toolCallId}`;
  return null;
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
