/**
 * Wire types for the Cody protocol (ACP v1 + `_cody/*`). Every type, `ErrorCode` and
 * `Method` come from `generated.ts`, which is generated from
 * `protocol/schema/cody-protocol.schema.json` (`python -m cody_protocol.schema --write`;
 * a Python test fails when it is stale). This file only names a few unions the schema
 * leaves anonymous; `src/test/schema.test.ts` validates every message recorded against
 * the real daemon with that schema.
 *
 * Invariant: types and the generated constant tables only; no `vscode` import.
 */

import type {
  AgentMessageChunk,
  AgentThoughtChunk,
  CodySessionMeta,
  NewSessionParams,
  PromptParams,
  PromptResult,
  RequestPermissionResult,
  RewindParams,
  SessionNotification,
  ToolCallStart,
  UserMessageChunk,
} from "./generated";

export * from "./generated";

/** A prompt's (or a chunk's) content block. */
export type ContentBlock = PromptParams["prompt"][number];

/** `ContentToolCallContent` | `DiffToolCallContent` | `TerminalToolCallContent` */
export type ToolCallContent = NonNullable<ToolCallStart["content"]>[number];

export type ToolKind = NonNullable<ToolCallStart["kind"]>;
export type ToolCallStatus = NonNullable<ToolCallStart["status"]>;
export type StopReason = PromptResult["stopReason"];
export type ApprovalPolicy = NonNullable<CodySessionMeta["approvalPolicy"]>;
export type SandboxMode = NonNullable<CodySessionMeta["sandboxMode"]>;

/** `McpServerStdio` | `McpServerHttp` | `McpServerSse` */
export type McpServer = NonNullable<NewSessionParams["mcpServers"]>[number];

/** Every `session/update` kind. */
export type SessionUpdate = SessionNotification["update"];

/** `UserMessageChunk` / `AgentMessageChunk` / `AgentThoughtChunk` */
export type ChunkUpdate = UserMessageChunk | AgentMessageChunk | AgentThoughtChunk;

/** `SelectedOutcome` | `CancelledOutcome` */
export type PermissionOutcome = RequestPermissionResult["outcome"];

/** What a rewind takes back: `files`, `conversation` or `both`. */
export type RestoreWhat = RewindParams["restore"];
