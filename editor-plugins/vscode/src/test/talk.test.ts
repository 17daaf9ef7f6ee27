/**
 * Talking to a running turn (issue 30) through the controller and the real daemon, on the
 * scripted talk model: a message sent while a turn runs steers it, Tab's queue runs a prompt
 * after it, a cancel drops the queue, and attached files reach the model.
 */

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";

import type { ChatController } from "../chat/controller";
import type { ChatState } from "../chat/state";
import { TestEnv, waitFor, within } from "./support/daemon";
import { agentText, toolCalls, userTexts } from "./support/views";

const TIMEOUT = { timeout: 90_000 };
const TALK = process.env.CODY_TEST_TALK_CONFIG ? {} : { skip: "CODY_TEST_TALK_CONFIG is not set (run through tests/e2e/test_vscode_extension.py)" };

function notices(state: ChatState): string[] {
  return state.items.flatMap((item) => (item.type === "notice" ? [item.text] : []));
}

async function withTalkChat(body: (chat: ChatController, env: TestEnv) => Promise<void>): Promise<void> {
  const env = new TestEnv();
  assert.ok(env.useTalkModel());
  const chat = env.controller();
  try {
    await body(chat, env);
  } finally {
    await within(chat.dispose(), 15_000, "daemon shutdown");
    env.cleanup();
  }
}

async function commandRuns(chat: ChatController): Promise<void> {
  await waitFor(() => toolCalls(chat.state)[0]?.status === "in_progress", 30_000, "the slow command runs");
}

describe("talking to a running turn", { ...TALK }, () => {

  test("a message sent while a turn runs steers it", TIMEOUT, async () => {
    await withTalkChat(async (chat, env) => {
      const gate = join(env.root, "tmp", "steer");
      const turn = chat.send(`slow ${gate}`);
      await commandRuns(chat);
      assert.equal(await chat.send("also update the docs"), undefined, "a steer, not a turn");
      await waitFor(() => notices(chat.state).some((n) => n.startsWith("Sent to the running turn")), 10_000, "steer sent");
      writeFileSync(gate, "");
      const result = await within(turn, 30_000, "the turn");
      assert.equal(result?.stopReason, "end_turn");
      assert.deepEqual(userTexts(chat.state), [`slow ${gate}`, "also update the docs"], "the daemon's echo is a message of its own");
      assert.match(agentText(chat.state), /ok: also update the docs/);
    });
  });

  test("a queued prompt runs after the running turn", TIMEOUT, async () => {
    await withTalkChat(async (chat, env) => {
      const gate = join(env.root, "tmp", "queue");
      const turn = chat.send(`slow ${gate}`);
      await commandRuns(chat);
      await chat.queue("second task");
      assert.deepEqual(chat.state.queued, ["second task"]);
      writeFileSync(gate, "");
      await within(turn, 30_000, "the first turn");
      await waitFor(() => !chat.state.busy && agentText(chat.state).includes("ok: second task"), 30_000, "the queued turn");
      assert.deepEqual(chat.state.queued, []);
      assert.deepEqual(userTexts(chat.state), [`slow ${gate}`, "second task"]);
      assert.equal(chat.state.lastStopReason, "end_turn");
    });
  });

  test("cancelling the turn drops the queued prompts", TIMEOUT, async () => {
    await withTalkChat(async (chat, env) => {
      const gate = join(env.root, "tmp", "never");
      const turn = chat.send(`slow ${gate}`);
      await commandRuns(chat);
      await chat.queue("later");
      await chat.cancel();
      assert.equal((await within(turn, 30_000, "the cancelled turn"))?.stopReason, "cancelled");
      await waitFor(() => notices(chat.state).includes("Dropped the queued prompt: later"), 10_000, "dropped");
      assert.doesNotMatch(agentText(chat.state), /ok: later/);
      assert.deepEqual(chat.state.queued, []);
    });
  });

  test("an attached file goes with the next message, once", TIMEOUT, async () => {
    await withTalkChat(async (chat, env) => {
      env.writeFiles({ "notes.txt": "remember the milk\n" });
      chat.attach({ name: "notes.txt", uri: `file://${join(env.workspace, "notes.txt")}`, text: "remember the milk\n" });
      assert.deepEqual(chat.state.attachments, ["notes.txt"]);
      await within(chat.send("what does it say"), 30_000, "the turn");
      assert.deepEqual(chat.state.attachments, [], "sent, so no longer listed");
      assert.match(agentText(chat.state), /ok: what does it say[\s\S]*remember the milk/);
      await within(chat.send("again"), 30_000, "the next turn");
      assert.doesNotMatch(agentText(chat.state).split("ok: again")[1] ?? "", /remember the milk/);
    });
  });
});
