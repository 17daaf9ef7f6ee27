/**
 * Wire types for the Cody protocol (ACP v1 + `_cody/*`), hand-written from
 * `protocol/schema/cody-protocol.schema.json` (the `$defs` name is given on each type).
 * Only the messages this extension sends or reads are typed; `src/test/schema.test.ts`
 * validates every message recorded against the real daemon with that schema.
 *
 * Invariant: types and two constant tables only; no `vscode` import.
 */

/** JSON value (for `rawInput` / `rawOutput` / error `data`). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

// ---------------------------------------------------------------- initialize

/** `Implementation` */
export interface Implementation {
  name: string;
  version: string;
  title?: string | null;
}

/** `ClientCapabilities` */
export interface ClientCapabilities {
  fs?: { readTextFile?: boolean; writeTextFile?: boolean };
  terminal?: boolean;
}

/** `InitializeParams` */
export interface InitializeParams {
  protocolVersion: number;
  clientCapabilities: ClientCapabilities;
  clientInfo?: Implementation | null;
}

/** `ProviderInfo` */
export interface ProviderInfo {
  id: string;
  name: string;
  wireApi: "responses" | "chat" | "anthropic" | "offline";
  defaultModel: string;
  available: boolean;
  credentials: string;
}

/** `CodyInitializeMeta` */
export interface CodyInitializeMeta {
  version: string;
  extensions: string[];
  providers: ProviderInfo[];
  defaultProvider: string;
  dataDir: string;
  configFile: string;
}

/** `AuthMethod` */
export interface AuthMethod {
  id: string;
  name: string;
  description?: string | null;
}

/** `InitializeResult` */
export interface InitializeResult {
  protocolVersion?: number;
  agentInfo: Implementation;
  agentCapabilities?: {
    loadSession?: boolean;
    promptCapabilities?: { image?: boolean; audio?: boolean; embeddedContext?: boolean };
    mcpCapabilities?: { http?: boolean; sse?: boolean };
    sessionCapabilities?: Record<string, unknown>;
  };
  authMethods?: AuthMethod[];
  _meta: { cody: CodyInitializeMeta };
}

// ---------------------------------------------------------------- sessions

export type ApprovalPolicy = "untrusted" | "on-request" | "on-failure" | "never";
export type SandboxMode = "read-only" | "workspace-write" | "danger-full-access";

/** `CodySessionMeta`: per-session overrides sent in `session/new` `_meta.cody`. */
export interface CodySessionMeta {
  provider?: string | null;
  model?: string | null;
  approvalPolicy?: ApprovalPolicy | null;
  sandboxMode?: SandboxMode | null;
  reasoningEffort?: "minimal" | "low" | "medium" | "high" | null;
  reasoningSummary?: "auto" | "concise" | "detailed" | "none" | null;
  allowedTools?: string[] | null;
  phase?: "research" | "plan" | "implement" | null;
  backend?: "native" | "codex" | "claude" | null;
}

/** `EnvVariable` */
export interface EnvVariable {
  name: string;
  value: string;
}

/** `McpServerStdio` | `McpServerHttp` (the SSE transport is not offered by Cody). */
export type McpServer =
  | { name: string; command: string; args?: string[]; env?: EnvVariable[] }
  | { type: "http"; name: string; url: string; headers?: EnvVariable[] };

/** `NewSessionParams` */
export interface NewSessionParams {
  cwd: string;
  mcpServers: McpServer[];
  _meta?: { cody?: CodySessionMeta | null } | null;
}

/** `ConfigOptionValue` */
export interface ConfigOptionValue {
  value: string;
  name: string;
  description?: string | null;
}

/** `SessionConfigOption` */
export interface SessionConfigOption {
  id: string;
  name: string;
  currentValue: string;
  options: ConfigOptionValue[];
  type?: "select";
  category?: string | null;
  description?: string | null;
}

/** `SessionMode` */
export interface SessionMode {
  id: string;
  name: string;
  description?: string | null;
}

/** `SessionModeState` */
export interface SessionModeState {
  currentModeId: string;
  availableModes: SessionMode[];
}

/** `CodySessionResultMeta` */
export interface CodySessionResultMeta {
  provider: string;
  model: string;
  sessionFile: string;
  warnings?: string[];
}

/** `SessionStateResult`: the answer to `session/load` and `session/resume`. */
export interface SessionStateResult {
  modes: SessionModeState;
  configOptions: SessionConfigOption[];
  _meta?: { cody: CodySessionResultMeta } | null;
}

/** `NewSessionResult` */
export interface NewSessionResult extends SessionStateResult {
  sessionId: string;
}

/** `LoadSessionParams` (also `session/resume`). */
export interface LoadSessionParams {
  sessionId: string;
  cwd: string;
  mcpServers: McpServer[];
}

/** `ListSessionsParams` */
export interface ListSessionsParams {
  cwd?: string | null;
  cursor?: string | null;
}

/** `SessionInfo` */
export interface SessionInfo {
  sessionId: string;
  cwd: string;
  title?: string | null;
  updatedAt?: string | null;
}

/** `ListSessionsResult` */
export interface ListSessionsResult {
  sessions: SessionInfo[];
  nextCursor?: string | null;
}

/** `SessionIdParams` (`session/close`) and `CancelParams` (`session/cancel`). */
export interface SessionIdParams {
  sessionId: string;
}

/** `SetModeParams` */
export interface SetModeParams {
  sessionId: string;
  modeId: string;
}

/** `SetConfigOptionParams` */
export interface SetConfigOptionParams {
  sessionId: string;
  configId: string;
  value: string;
}

/** `SetConfigOptionResult` */
export interface SetConfigOptionResult {
  configOptions: SessionConfigOption[];
}

// ---------------------------------------------------------------- content

/** `TextContent` */
export interface TextContent {
  type: "text";
  text: string;
  annotations?: Record<string, unknown> | null;
}

/** `ImageContent`, `AudioContent`, `ResourceLink`, `EmbeddedResource`: kept opaque here. */
export interface OtherContent {
  type: "image" | "audio" | "resource_link" | "resource";
  [key: string]: unknown;
}

export type ContentBlock = TextContent | OtherContent;

/** `ContentToolCallContent` */
export interface ContentToolCallContent {
  type: "content";
  content: ContentBlock;
}

/** `DiffToolCallContent`: `oldText` is absent for a new file. */
export interface DiffToolCallContent {
  type: "diff";
  path: string;
  newText: string;
  oldText?: string | null;
}

export type ToolCallContent = ContentToolCallContent | DiffToolCallContent;

export type ToolKind =
  | "read"
  | "edit"
  | "delete"
  | "move"
  | "search"
  | "execute"
  | "think"
  | "fetch"
  | "other";

export type ToolCallStatus = "pending" | "in_progress" | "completed" | "failed";

/** `ToolCallLocation` */
export interface ToolCallLocation {
  path: string;
  line?: number | null;
}

// ---------------------------------------------------------------- a turn

/** `PromptParams` */
export interface PromptParams {
  sessionId: string;
  prompt: ContentBlock[];
}

/** `TokenUsage` */
export interface TokenUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  thoughtTokens?: number;
  cachedReadTokens?: number;
  cachedWriteTokens?: number;
}

/** `TurnUsage` */
export interface TurnUsage {
  last: TokenUsage;
  turn: TokenUsage;
  total: TokenUsage;
}

/** `TurnCost` (absent when the model has no known price). */
export interface TurnCost {
  last: number;
  turn: number;
  total: number;
  currency?: string;
}

/** `CodyPromptMeta` */
export interface CodyPromptMeta {
  turnId: string;
  usage: TurnUsage;
  cost?: TurnCost | null;
}

export type StopReason = "end_turn" | "cancelled" | "max_turn_requests" | "max_tokens" | "refusal";

/** `PromptResult` */
export interface PromptResult {
  stopReason: StopReason;
  _meta?: { cody: CodyPromptMeta } | null;
}

/** `Cost` */
export interface Cost {
  amount: number;
  currency: string;
}

/** `PlanEntry` */
export interface PlanEntry {
  content: string;
  status: "pending" | "in_progress" | "completed";
  priority?: "high" | "medium" | "low";
}

/** `UserMessageChunk` / `AgentMessageChunk` / `AgentThoughtChunk` */
export interface ChunkUpdate {
  sessionUpdate: "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk";
  content: ContentBlock;
}

/** `ToolCallStart`: the model asked for a tool (or, on replay, the call's final state). */
export interface ToolCallStart {
  sessionUpdate: "tool_call";
  toolCallId: string;
  title: string;
  kind?: ToolKind;
  status?: ToolCallStatus;
  content?: ToolCallContent[] | null;
  locations?: ToolCallLocation[] | null;
  rawInput?: Json;
  rawOutput?: Json;
}

/** `ToolCallUpdate`: only the fields that changed. */
export interface ToolCallUpdate {
  sessionUpdate: "tool_call_update";
  toolCallId: string;
  title?: string | null;
  kind?: ToolKind | null;
  status?: ToolCallStatus | null;
  content?: ToolCallContent[] | null;
  locations?: ToolCallLocation[] | null;
  rawInput?: Json;
  rawOutput?: Json;
}

/** `PlanUpdate` */
export interface PlanUpdate {
  sessionUpdate: "plan";
  entries: PlanEntry[];
}

/** `UsageUpdate`: context use after each model call. */
export interface UsageUpdate {
  sessionUpdate: "usage_update";
  used: number;
  size: number;
  cost?: Cost | null;
}

/** `ConfigOptionUpdate` */
export interface ConfigOptionUpdate {
  sessionUpdate: "config_option_update";
  configOptions: SessionConfigOption[];
}

/** `CurrentModeUpdate` */
export interface CurrentModeUpdate {
  sessionUpdate: "current_mode_update";
  currentModeId: string;
}

/** `SessionInfoUpdate` */
export interface SessionInfoUpdate {
  sessionUpdate: "session_info_update";
  title?: string | null;
  updatedAt?: string | null;
}

export type SessionUpdate =
  | ChunkUpdate
  | ToolCallStart
  | ToolCallUpdate
  | PlanUpdate
  | UsageUpdate
  | ConfigOptionUpdate
  | CurrentModeUpdate
  | SessionInfoUpdate;

/** `SessionNotification`: the params of `session/update`. */
export interface SessionNotification {
  sessionId: string;
  update: SessionUpdate;
}

// ---------------------------------------------------------------- approvals

/** `PermissionOption` */
export interface PermissionOption {
  optionId: string;
  name: string;
  kind: "allow_once" | "allow_always" | "reject_once" | "reject_always";
}

/** `PermissionToolCall` */
export interface PermissionToolCall {
  toolCallId: string;
  title: string;
  kind: ToolKind;
  status?: ToolCallStatus;
  rawInput?: Json;
  content?: ToolCallContent[];
}

/** `CodyPermissionMeta` */
export interface CodyPermissionMeta {
  requestId: string | number;
  grantKey?: string | null;
  /** `false` when the command would run without a sandbox. */
  sandboxed?: boolean | null;
  /** Why the model asks to run the command outside the sandbox (`exec` with `escalate`). */
  justification?: string | null;
  /** The allow rules the `allow_project` option would save, and for which project. */
  projectRules?: string[] | null;
  project?: string | null;
}

/** `RequestPermissionParams`: the params of `session/request_permission`. */
export interface RequestPermissionParams {
  sessionId: string;
  toolCall: PermissionToolCall;
  options: PermissionOption[];
  _meta?: { cody: CodyPermissionMeta } | null;
}

/** `SelectedOutcome` | `CancelledOutcome` */
export type PermissionOutcome = { outcome: "selected"; optionId: string } | { outcome: "cancelled" };

/** `RequestPermissionResult` */
export interface RequestPermissionResult {
  outcome: PermissionOutcome;
}

// ---------------------------------------------------------------- extensions

/** `ModelInfo` */
export interface ModelInfo {
  id: string;
  contextWindow: number;
}

/** `ProviderModels` */
export interface ProviderModels {
  id: string;
  name: string;
  wireApi: string;
  available: boolean;
  defaultModel: string;
  models: ModelInfo[];
}

/** `ModelsListResult`: the answer to `_cody/models/list`. */
export interface ModelsListResult {
  providers: ProviderModels[];
}

/** `McpStatusNotification`: the params of `_cody/mcp/status`. */
export interface McpStatusNotification {
  sessionId: string;
  server: string;
  state: "starting" | "ready" | "failed";
  tools?: number;
  reason?: string | null;
}

// ---------------------------------------------------------------- errors

/** `ParamIssue` */
export interface ParamIssue {
  key: string;
  message: string;
  value?: Json;
  valid?: Json[] | null;
  source?: string | null;
}

/** `InvalidParamsData`: `data` of a -32602 error. */
export interface InvalidParamsData {
  errors: ParamIssue[];
}

/** `AuthRequiredData`: `data` of a -32000 error. */
export interface AuthRequiredData {
  provider: string;
  fix: string;
}

/** `ProviderErrorData`: `data` of a -32010 error. */
export interface ProviderErrorData {
  kind: "auth" | "rate_limit" | "context_window" | "network" | "provider";
  retryable: boolean;
  provider: string;
  httpStatus?: number | null;
}

/** JSON-RPC error codes the daemon uses (docs/protocol.md, "Errors"). */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  AuthRequired: -32000,
  NotFound: -32002,
  RequestCancelled: -32800,
  ProviderError: -32010,
  SessionBusy: -32011,
} as const;

/** Method names, in one place. */
export const Method = {
  initialize: "initialize",
  shutdown: "shutdown",
  exit: "exit",
  sessionNew: "session/new",
  sessionLoad: "session/load",
  sessionResume: "session/resume",
  sessionList: "session/list",
  sessionClose: "session/close",
  sessionPrompt: "session/prompt",
  sessionCancel: "session/cancel",
  sessionSetConfigOption: "session/set_config_option",
  sessionSetMode: "session/set_mode",
  sessionUpdate: "session/update",
  requestPermission: "session/request_permission",
  modelsList: "_cody/models/list",
  mcpStatus: "_cody/mcp/status",
} as const;
