// Generated from protocol/schema/cody-protocol.schema.json by
// `python -m cody_protocol.schema --write` (cody_protocol/typescript.py). Do not edit:
// tests/unit/test_vscode_types.py fails when this file is stale.

/** Any JSON value (`rawInput`, `rawOutput`, error `data`, `_meta`). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** A built-in tool that is not offered to the model here, and why. */
export interface AbsentTool {
  name: string;
  reason: string;
}

/** `AgentAuthCapabilities` */
export interface AgentAuthCapabilities {
  logout?: { [key: string]: Json };
}

/** `AgentCapabilities` */
export interface AgentCapabilities {
  auth?: AgentAuthCapabilities;
  loadSession?: boolean;
  mcpCapabilities?: McpCapabilities;
  promptCapabilities?: PromptCapabilities;
  sessionCapabilities?: SessionCapabilities;
}

/** One external agent CLI a session can use as its backend (`_cody/agents/list`). */
export interface AgentInfo {
  found: boolean;
  foundVia?: string | null;
  hint?: string | null;
  id: "codex" | "claude";
  login: "ok" | "missing" | "unknown";
  loginSource?: string | null;
  name: string;
  path?: string | null;
  version?: string | null;
}

/** `AgentMessageChunk` */
export interface AgentMessageChunk {
  content: TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource;
  messageId?: string | null;
  sessionUpdate: "agent_message_chunk";
}

/** `AgentThoughtChunk` */
export interface AgentThoughtChunk {
  content: TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource;
  messageId?: string | null;
  sessionUpdate: "agent_thought_chunk";
}

/** `AgentsListResult` */
export interface AgentsListResult {
  agents: AgentInfo[];
}

/** `AudioContent` */
export interface AudioContent {
  data: string;
  mimeType: string;
  type: "audio";
}

/** An agent-handled auth method: `authenticate {methodId}` checks its credentials. */
export interface AuthMethod {
  description?: string | null;
  id: string;
  name: string;
}

/** `data` of a -32000 error. */
export interface AuthRequiredData {
  details?: string | null;
  fix: string;
  provider: string;
}

/** `AuthenticateParams` */
export interface AuthenticateParams {
  methodId: string;
}

/** `AvailableCommand` */
export interface AvailableCommand {
  description: string;
  input?: AvailableCommandInput | null;
  name: string;
}

/** ACP's unstructured input: all text typed after the command name. */
export interface AvailableCommandInput {
  hint: string;
}

/** `AvailableCommandsUpdate` */
export interface AvailableCommandsUpdate {
  availableCommands: AvailableCommand[];
  sessionUpdate: "available_commands_update";
}

/** An external program the daemon runs (`bwrap` for the sandbox, `rg` for search). */
export interface BinaryInfo {
  name: "bwrap" | "rg";
  origin?: "env" | "system" | "wheel" | null;
  path?: string | null;
  problem?: string | null;
  usable: boolean;
  version?: string | null;
}

/** `BlobResourceContents` */
export interface BlobResourceContents {
  blob: string;
  mimeType?: string | null;
  uri: string;
}

/** `CancelParams` */
export interface CancelParams {
  sessionId: string;
}

/** `CancelledOutcome` */
export interface CancelledOutcome {
  outcome: "cancelled";
}

/** `CheckpointDiffParams` */
export interface CheckpointDiffParams {
  checkpointId: string;
  sessionId: string;
}

/** `CheckpointDiffResult` */
export interface CheckpointDiffResult {
  checkpointId: string;
  diff: string;
  files?: CheckpointFile[];
  truncated?: boolean;
}

/** `CheckpointFile` */
export interface CheckpointFile {
  change: "added" | "modified" | "deleted";
  path: string;
}

/** One checkpoint: the workspace (and conversation) before a turn, or before a rewind. */
export interface CheckpointInfo {
  checkpointId: string;
  error?: string | null;
  files: CheckpointFile[];
  inConversation?: boolean | null;
  interrupted?: boolean;
  notCovered?: NotCoveredFile[];
  prompt: string;
  reason?: "turn" | "rewind";
  restorable?: boolean;
  time: string;
  turn?: number | null;
}

/** `_cody/session/checkpoints {sessionId}` (a live session). */
export interface CheckpointsParams {
  sessionId: string;
}

/** `CheckpointsResult` */
export interface CheckpointsResult {
  checkpoints: CheckpointInfo[];
}

/** `ClientCapabilities` */
export interface ClientCapabilities {
  _meta?: { [key: string]: Json } | null;
  fs?: FileSystemCapabilities;
  terminal?: boolean;
}

/** `CloseSessionMeta` */
export interface CloseSessionMeta {
  cody?: CodyCloseSessionMeta | null;
}

/** `session/close`'s answer: `{}`, or what became of a worktree session's worktree. */
export interface CloseSessionResult {
  _meta?: CloseSessionMeta | null;
}

/** `CodyCloseSessionMeta` */
export interface CodyCloseSessionMeta {
  worktree?: WorktreeInfo | null;
}

/** `CodyInitializeMeta` */
export interface CodyInitializeMeta {
  binaries?: BinaryInfo[];
  configFile: string;
  dataDir: string;
  defaultProvider: string;
  extensions: string[];
  locations?: DaemonLocations | null;
  providers: ProviderInfo[];
  version: string;
}

/** `session/load` and `session/resume` `_meta.cody`. */
export interface CodyLoadSessionMeta {
  relocate?: boolean;
}

/** `CodyLogoutMeta` */
export interface CodyLogoutMeta {
  loggedOut: string[];
}

/** `CodyMcpElicitMeta` */
export interface CodyMcpElicitMeta {
  requestId: string | number;
}

/** What a client may add to its permission answer (docs/protocol.md "Approvals"). */
export interface CodyPermissionAnswerMeta {
  message?: string | null;
  updatedInput?: { [key: string]: Json } | null;
}

/** `CodyPermissionMeta` */
export interface CodyPermissionMeta {
  agent?: string | null;
  grantKey?: string | null;
  justification?: string | null;
  parentSessionId?: string | null;
  parentToolCallId?: string | null;
  project?: string | null;
  projectRules?: string[] | null;
  requestId: string | number;
  sandboxed?: boolean | null;
}

/** `CodyPromptMeta` */
export interface CodyPromptMeta {
  cost?: TurnCost | null;
  dryRun?: DryRunReport | null;
  output?: StructuredOutput | null;
  subagents?: SubagentTotals | null;
  turnId: string;
  usage: TurnUsage;
}

/** `CodyPromptParamsMeta` */
export interface CodyPromptParamsMeta {
  dryRun?: boolean;
  outputSchema?: { [key: string]: Json } | null;
  queue?: boolean;
}

/** Per-session overrides in `session/new` `_meta.cody` (docs/protocol.md "Settings" table). */
export interface CodySessionMeta {
  allowedTools?: string[] | null;
  approvalPolicy?: "untrusted" | "on-request" | "on-failure" | "never" | null;
  backend?: "native" | "codex" | "claude" | null;
  config?: { [key: string]: Json } | null;
  ephemeral?: boolean;
  model?: string | null;
  phase?: "research" | "plan" | "implement" | null;
  provider?: string | null;
  reasoningEffort?: "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | null;
  reasoningSummary?: "auto" | "concise" | "detailed" | "none" | null;
  sandboxMode?: "read-only" | "workspace-write" | "danger-full-access" | null;
  worktree?: boolean | string | null;
  writableRoots?: string[] | null;
}

/** `CodySessionResultMeta` */
export interface CodySessionResultMeta {
  backend?: "native" | "codex" | "claude";
  commands?: CustomCommandInfo[];
  disabledSkills?: SkillInfo[];
  hooks?: HookInfo[];
  model: string;
  parentSessionId?: string | null;
  projectDocs?: ProjectDoc[];
  provider: string;
  sessionFile: string;
  skills?: SkillInfo[];
  warnings?: string[];
  worktree?: WorktreeInfo | null;
}

/** `_meta.cody` of a child session's `session/update` (and of its permission requests). */
export interface CodyUpdateMeta {
  agent?: string | null;
  parentSessionId: string;
  parentToolCallId?: string | null;
}

/** `CodyUserMessageMeta` */
export interface CodyUserMessageMeta {
  steered?: boolean | null;
}

/** `_cody/session/compact {sessionId}`: summarise the conversation so far now. */
export interface CompactSessionParams {
  sessionId: string;
}

/**
 * What `_cody/session/compact` did. `compacted` is false when there was nothing to
 * summarise (`reason` says why); the history in the session file is never shortened.
 */
export interface CompactSessionResult {
  compacted: boolean;
  keptItems?: number;
  reason?: string | null;
  summarizedItems?: number;
  tokensAfter?: number;
  tokensBefore?: number;
}

/**
 * The conversation was compacted: the model now sees a summary plus the recent items.
 *
 * The session file keeps the whole history (`session/load` still replays all of it).
 */
export interface CompactionNotice {
  keptItems: number;
  reason: "auto" | "manual";
  summarizedItems: number;
  tokensAfter: number;
  tokensBefore: number;
}

/**
 * `_cody/config/check` (params as `session/new`): what `session/new` would say about the
 * configuration, found by the same checks, with no session created.
 *
 * `ok` is false exactly when `session/new` would fail; `error` is then the JSON-RPC error it
 * would answer (a -32602 naming each key, value, source file and the valid values).
 * `warnings` are the `_meta.cody.warnings` it would report (e.g. an untrusted project's
 * ignored keys).
 */
export interface ConfigCheckResult {
  error?: RpcError | null;
  files: ConfigFileInfo[];
  ok: boolean;
  warnings?: string[];
}

/** A config file `session/new` reads for the checked cwd. */
export interface ConfigFileInfo {
  exists: boolean;
  path: string;
  scope: "user" | "project";
  trusted?: boolean | null;
}

/** `ConfigOptionUpdate` */
export interface ConfigOptionUpdate {
  configOptions: SessionConfigOption[];
  sessionUpdate: "config_option_update";
}

/** `ConfigOptionValue` */
export interface ConfigOptionValue {
  description?: string | null;
  name: string;
  value: string;
}

/** A content block shown as a tool call's output. */
export interface ContentToolCallContent {
  content: TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource;
  type: "content";
}

/** `Cost` */
export interface Cost {
  amount: number;
  currency: string;
}

/** `CurrentModeUpdate` */
export interface CurrentModeUpdate {
  currentModeId: string;
  sessionUpdate: "current_mode_update";
}

/** A custom command (or a skill run as one) the session runs as `/<name>`. */
export interface CustomCommandInfo {
  description: string;
  hint?: string | null;
  kind?: "command" | "skill";
  name: string;
  origin: "cody" | "claude" | "codex" | "agents";
  scope: "user" | "project";
  source: string;
}

/**
 * Where the daemon reads from (absolute, normalised paths; cody_protocol.locations). A
 * client uses a warm daemon only when these equal its own environment's.
 */
export interface DaemonLocations {
  claudeConfigDir: string;
  codexHome: string;
  configDir: string;
  dataDir: string;
  home: string;
}

/** One problem a language server found (1-based lines and columns). */
export interface DiagnosticInfo {
  code?: string | null;
  column: number;
  endColumn: number;
  endLine: number;
  line: number;
  message: string;
  severity: "error" | "warning" | "information" | "hint";
  source?: string | null;
}

/**
 * `_cody/diagnostics`: what the language servers found new in a file a tool call
 * changed (the same lines the model gets with the call's result). An empty `diagnostics`
 * means nothing new; `late` names servers whose answer did not come in time.
 */
export interface DiagnosticsNotification {
  diagnostics: DiagnosticInfo[];
  late?: string[];
  path: string;
  servers?: string[];
  sessionId: string;
  toolCallId?: string | null;
}

/** A file edit shown as a diff. `old_text` is absent for a new file. */
export interface DiffToolCallContent {
  newText: string;
  oldText?: string | null;
  path: string;
  type: "diff";
}

/** What a turn would run, without running it (`session/prompt` with `_meta.cody.dryRun`). */
export interface DryRunReport {
  allowedTools?: string[] | null;
  backend: string;
  backendTools?: string[] | null;
  command?: string[] | null;
  cwd: string;
  env?: string[];
  flags?: { [key: string]: Json };
  found?: boolean;
  notes?: string[];
  requests?: { [key: string]: Json }[];
}

/** `EmbeddedResource` */
export interface EmbeddedResource {
  resource: TextResourceContents | BlobResourceContents;
  type: "resource";
}

/** `EnvVariable` */
export interface EnvVariable {
  name: string;
  value: string;
}

/**
 * `_cody/files/search`: files of a session's workspace whose path fuzzily matches `query`
 * (what the model's `fileSearch` finds: ignore rules apply, `.git` is skipped), for a
 * client's `@path` completion.
 */
export interface FileSearchParams {
  limit?: number;
  query?: string;
  sessionId: string;
}

/** `FileSearchResult` */
export interface FileSearchResult {
  more?: boolean;
  paths: string[];
}

/** `FileSystemCapabilities` */
export interface FileSystemCapabilities {
  readTextFile?: boolean;
  writeTextFile?: boolean;
}

/** `ForkSessionParams` */
export interface ForkSessionParams {
  atMessage?: number | null;
  cwd: string;
  mcpServers?: (McpServerHttp | McpServerSse | McpServerStdio)[];
  sessionId: string;
}

/** `ForkSessionResult` */
export interface ForkSessionResult {
  _meta?: SessionResultMeta | null;
  configOptions: SessionConfigOption[];
  modes: SessionModeState;
  sessionId: string;
}

/** A hook that runs in this session (an untrusted project's never do: see `warnings`). */
export interface HookInfo {
  async?: boolean;
  command: string;
  event: string;
  failClosed?: boolean;
  matcher?: string | null;
  scope: "user" | "project";
  source: string;
  timeoutSec: number;
}

/**
 * `_cody/hook/status`: a hook failed or timed out (it then blocks nothing unless it is
 * `failClosed`), or wrote a `systemMessage` for the user.
 */
export interface HookStatusNotification {
  command: string;
  event: string;
  message: string;
  sessionId: string;
  source: string;
  status: "failed" | "timed_out" | "message";
}

/** `HttpHeader` */
export interface HttpHeader {
  name: string;
  value: string;
}

/** `ImageContent` */
export interface ImageContent {
  data: string;
  mimeType: string;
  type: "image";
  uri?: string | null;
}

/** `Implementation` */
export interface Implementation {
  name: string;
  title?: string | null;
  version: string;
}

/** `InitializeMeta` */
export interface InitializeMeta {
  cody: CodyInitializeMeta;
}

/** `InitializeParams` */
export interface InitializeParams {
  clientCapabilities?: ClientCapabilities;
  clientInfo?: Implementation | null;
  protocolVersion?: number | string;
}

/** `InitializeResult` */
export interface InitializeResult {
  _meta: InitializeMeta;
  agentCapabilities?: AgentCapabilities;
  agentInfo: Implementation;
  authMethods?: AuthMethod[];
  protocolVersion?: number;
}

/** `data` of a -32602 error. */
export interface InvalidParamsData {
  details?: string | null;
  errors: ParamIssue[];
}

/** `KillProcessParams` */
export interface KillProcessParams {
  processId: number;
  sessionId: string;
}

/** `KillProcessResult` */
export interface KillProcessResult {
  outcome: "stopped" | "already ended";
  process: ProcessInfo;
}

/** `LanguageServerInfo` */
export interface LanguageServerInfo {
  command: string[];
  extensions: string[];
  name: string;
  path?: string | null;
  problem?: string | null;
  sandboxed: boolean;
  state: "found" | "not found" | "started" | "failed" | "not started";
}

/**
 * `_cody/lsp/servers {cwd?, start?}`: the language servers a session in `cwd` (default:
 * the daemon's directory) would get; with `start`, each found one is started there,
 * initialized and stopped again (what `cody-client doctor` shows).
 */
export interface LanguageServersParams {
  cwd?: string | null;
  start?: boolean;
}

/** `LanguageServersResult` */
export interface LanguageServersResult {
  cwd: string;
  enabled: boolean;
  servers: LanguageServerInfo[];
}

/** `ListSessionsParams` */
export interface ListSessionsParams {
  cursor?: string | null;
  cwd?: string | null;
}

/** `ListSessionsResult` */
export interface ListSessionsResult {
  nextCursor?: string | null;
  sessions: SessionInfo[];
}

/** `ListedSessionMeta` */
export interface ListedSessionMeta {
  cody?: cody_protocol__session__CodySessionInfoMeta | null;
}

/** `LoadSessionMeta` */
export interface LoadSessionMeta {
  cody?: CodyLoadSessionMeta | null;
}

/** `LoadSessionParams` */
export interface LoadSessionParams {
  _meta?: LoadSessionMeta | null;
  cwd: string;
  mcpServers?: (McpServerHttp | McpServerSse | McpServerStdio)[];
  sessionId: string;
}

/** `LogoutMeta` */
export interface LogoutMeta {
  cody: CodyLogoutMeta;
}

/** `logout` answers `{}`; Cody adds what it ended in `_meta.cody`. */
export interface LogoutResult {
  _meta?: LogoutMeta | null;
}

/** `McpCapabilities` */
export interface McpCapabilities {
  http?: boolean;
  sse?: boolean;
}

/** `McpElicitMeta` */
export interface McpElicitMeta {
  cody: CodyMcpElicitMeta;
}

/** `McpElicitParams` */
export interface McpElicitParams {
  _meta?: McpElicitMeta | null;
  elicitationId?: string | null;
  message: string;
  mode?: "form" | "url";
  requestedSchema?: { [key: string]: Json } | null;
  server: string;
  sessionId: string;
  toolCallId?: string | null;
  url?: string | null;
}

/** `McpElicitResult` */
export interface McpElicitResult {
  action: "accept" | "decline" | "cancel";
  content?: { [key: string]: string | number | boolean | string[] | null } | null;
}

/** `McpServerHttp` */
export interface McpServerHttp {
  headers?: HttpHeader[];
  name: string;
  type: "http";
  url: string;
}

/** `McpServerSse` */
export interface McpServerSse {
  headers?: HttpHeader[];
  name: string;
  type: "sse";
  url: string;
}

/** One MCP server of a session: `starting`, `ready` (with its tool count) or `failed`. */
export interface McpServerStatus {
  reason?: string | null;
  server: string;
  state: "starting" | "ready" | "failed";
  tools?: number;
}

/** `McpServerStdio` */
export interface McpServerStdio {
  args?: string[];
  command: string;
  env?: EnvVariable[];
  name: string;
}

/** `_cody/mcp/status`: sent for every state change of a session's MCP server. */
export interface McpStatusNotification {
  reason?: string | null;
  server: string;
  sessionId: string;
  state: "starting" | "ready" | "failed";
  tools?: number;
}

/** `ModelInfo` */
export interface ModelInfo {
  contextWindow: number;
  id: string;
}

/** `ModelsListResult` */
export interface ModelsListResult {
  providers: ProviderModels[];
}

/** `NewSessionMeta` */
export interface NewSessionMeta {
  cody?: CodySessionMeta | null;
}

/** `NewSessionParams` */
export interface NewSessionParams {
  _meta?: NewSessionMeta | null;
  cwd: string;
  mcpServers?: (McpServerHttp | McpServerSse | McpServerStdio)[];
}

/** `NewSessionResult` */
export interface NewSessionResult {
  _meta?: SessionResultMeta | null;
  configOptions: SessionConfigOption[];
  modes: SessionModeState;
  sessionId: string;
}

/**
 * A file a checkpoint does not hold (too large, a nested git repository, unreadable,
 * not a regular file); ignored files are not listed.
 */
export interface NotCoveredFile {
  path: string;
  why: string;
}

/** One invalid field or configuration key. */
export interface ParamIssue {
  key: string;
  message: string;
  source?: string | null;
  valid?: Json[] | null;
  value?: Json;
}

/** `PermissionAnswerMeta` */
export interface PermissionAnswerMeta {
  cody?: CodyPermissionAnswerMeta | null;
}

/** `PermissionMeta` */
export interface PermissionMeta {
  cody: CodyPermissionMeta;
}

/** `PermissionOption` */
export interface PermissionOption {
  kind: "allow_once" | "allow_always" | "reject_once" | "reject_always";
  name: string;
  optionId: string;
}

/** `PermissionRuleInfo` */
export interface PermissionRuleInfo {
  decision: "allow" | "ask" | "deny";
  project?: string | null;
  readOnly?: boolean;
  rule: string;
  source: string;
}

/** `PermissionToolCall` */
export interface PermissionToolCall {
  content?: (ContentToolCallContent | DiffToolCallContent | TerminalToolCallContent)[];
  kind: "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "other";
  locations?: ToolCallLocation[] | null;
  rawInput?: Json;
  status?: "pending" | "in_progress" | "completed" | "failed";
  title: string;
  toolCallId: string;
}

/**
 * `_cody/permissions/list {cwd?}`: the rules that apply in `cwd` (default: every rule of
 * the user config, all projects, plus the read-only Codex and Claude Code files).
 */
export interface PermissionsListParams {
  cwd?: string | null;
}

/** `PermissionsListResult` */
export interface PermissionsListResult {
  rules: PermissionRuleInfo[];
  warnings?: string[];
}

/** `_cody/permissions/remove`: remove one rule from the user config (as listed). */
export interface PermissionsRemoveParams {
  decision: "allow" | "ask" | "deny";
  project?: string | null;
  rule: string;
  source: string;
}

/** `PermissionsRemoveResult` */
export interface PermissionsRemoveResult {
  removed: boolean;
}

/** `PlanEntry` */
export interface PlanEntry {
  content: string;
  priority?: "high" | "medium" | "low";
  status: "pending" | "in_progress" | "completed";
}

/** `PlanUpdate` */
export interface PlanUpdate {
  entries: PlanEntry[];
  sessionUpdate: "plan";
}

/** `ProcessInfo` */
export interface ProcessInfo {
  background: boolean;
  command: string | string[];
  cwd: string;
  exitCode?: number | null;
  kept: boolean;
  outputBytes: number;
  pid: number;
  processId: number;
  running: boolean;
  sandboxed: boolean;
  signal?: string | null;
  startedAt: string;
  stoppedBy?: string | null;
  toolCallId?: string | null;
  tty: boolean;
}

/** One project instructions file (AGENTS.md...) found for the session. */
export interface ProjectDoc {
  bytes: number;
  path: string;
  skipped?: string | null;
  truncated?: boolean;
}

/** `PromptCapabilities` */
export interface PromptCapabilities {
  audio?: boolean;
  embeddedContext?: boolean;
  image?: boolean;
}

/** `PromptMeta` */
export interface PromptMeta {
  cody: CodyPromptMeta;
}

/** `PromptParams` */
export interface PromptParams {
  _meta?: PromptParamsMeta | null;
  prompt: (TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource)[];
  sessionId: string;
}

/** `PromptParamsMeta` */
export interface PromptParamsMeta {
  cody?: CodyPromptParamsMeta | null;
}

/** `PromptResult` */
export interface PromptResult {
  _meta?: PromptMeta | null;
  stopReason: "end_turn" | "cancelled" | "max_turn_requests" | "max_tokens" | "refusal";
  usage?: TokenUsage | null;
}

/** `data` of a -32010 error. */
export interface ProviderErrorData {
  details?: string | null;
  httpStatus?: number | null;
  kind: "auth" | "rate_limit" | "context_window" | "network" | "provider";
  provider: string;
  retryable: boolean;
}

/** A model provider the daemon knows, and whether it can be used now. */
export interface ProviderInfo {
  available: boolean;
  credentials: string;
  defaultModel: string;
  id: string;
  name: string;
  wireApi: "responses" | "chat" | "anthropic" | "offline";
}

/** `ProviderModels` */
export interface ProviderModels {
  available: boolean;
  defaultModel: string;
  id: string;
  models: ModelInfo[];
  name: string;
  wireApi: string;
}

/** `ReadTextFileParams` */
export interface ReadTextFileParams {
  limit?: number | null;
  line?: number | null;
  path: string;
  sessionId: string;
}

/** `ReadTextFileResult` */
export interface ReadTextFileResult {
  content: string;
}

/** `RequestPermissionParams` */
export interface RequestPermissionParams {
  _meta?: PermissionMeta | null;
  options: PermissionOption[];
  sessionId: string;
  toolCall: PermissionToolCall;
}

/** `RequestPermissionResult` */
export interface RequestPermissionResult {
  _meta?: PermissionAnswerMeta | null;
  outcome: SelectedOutcome | CancelledOutcome;
}

/** `ResourceLink` */
export interface ResourceLink {
  description?: string | null;
  mimeType?: string | null;
  name: string;
  size?: number | null;
  title?: string | null;
  type: "resource_link";
  uri: string;
}

/** `RewindFailure` */
export interface RewindFailure {
  path: string;
  reason: string;
}

/** `_cody/session/rewind`: back to the state before a checkpoint's turn. */
export interface RewindParams {
  checkpointId: string;
  force?: boolean;
  restore: "files" | "conversation" | "both";
  sessionId: string;
}

/** `RewindResult` */
export interface RewindResult {
  conflicts: string[];
  conversationAt?: string | null;
  failed?: RewindFailure[];
  redoCheckpointId: string;
  restored: string[];
  stoppedProcesses?: RewindStoppedProcess[];
}

/** A process an undone turn started, stopped by a rewind of its files. */
export interface RewindStoppedProcess {
  command: string;
  processId: number;
}

/** The `error` member of a JSON-RPC error response. */
export interface RpcError {
  code: number;
  data?: Json;
  message: string;
}

/** `SelectedOutcome` */
export interface SelectedOutcome {
  optionId: string;
  outcome: "selected";
}

/** `SessionCapabilities` */
export interface SessionCapabilities {
  close?: { [key: string]: Json };
  delete?: { [key: string]: Json };
  fork?: { [key: string]: Json };
  list?: { [key: string]: Json };
  resume?: { [key: string]: Json };
}

/** A select-type config option (ACP `SessionConfigOption`). */
export interface SessionConfigOption {
  category?: string | null;
  currentValue: string;
  description?: string | null;
  id: string;
  name: string;
  options: ConfigOptionValue[];
  type?: "select";
}

/** `SessionIdParams` */
export interface SessionIdParams {
  sessionId: string;
}

/** `SessionInfo` */
export interface SessionInfo {
  _meta?: ListedSessionMeta | null;
  cwd: string;
  sessionId: string;
  title?: string | null;
  updatedAt?: string | null;
}

/** `SessionInfoMeta` */
export interface SessionInfoMeta {
  cody?: cody_protocol__updates__CodySessionInfoMeta | null;
}

/**
 * Title changes; Cody's `_meta.cody.compaction` announces a compaction (ACP lets agents
 * attach `_meta` to a session_info_update; clients that do not know it ignore it).
 */
export interface SessionInfoUpdate {
  _meta?: SessionInfoMeta | null;
  sessionUpdate: "session_info_update";
  title?: string | null;
  updatedAt?: string | null;
}

/** `SessionMode` */
export interface SessionMode {
  description?: string | null;
  id: string;
  name: string;
}

/** `SessionModeState` */
export interface SessionModeState {
  availableModes: SessionMode[];
  currentModeId: string;
}

/** `SessionNotification` */
export interface SessionNotification {
  _meta?: UpdateMeta | null;
  sessionId: string;
  update: UserMessageChunk | AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallUpdate | PlanUpdate | UsageUpdate | ConfigOptionUpdate | CurrentModeUpdate | SessionInfoUpdate | AvailableCommandsUpdate;
}

/** `SessionProcessesParams` */
export interface SessionProcessesParams {
  sessionId: string;
}

/** `SessionProcessesResult` */
export interface SessionProcessesResult {
  limit: number;
  processes: ProcessInfo[];
}

/** `SessionResultMeta` */
export interface SessionResultMeta {
  cody: CodySessionResultMeta;
}

/** Result of `session/load` and `session/resume`. */
export interface SessionStateResult {
  _meta?: SessionResultMeta | null;
  configOptions: SessionConfigOption[];
  modes: SessionModeState;
}

/** `SetConfigOptionParams` */
export interface SetConfigOptionParams {
  configId: string;
  sessionId: string;
  value: Json;
}

/** `SetConfigOptionResult` */
export interface SetConfigOptionResult {
  configOptions: SessionConfigOption[];
}

/** `SetModeParams` */
export interface SetModeParams {
  modeId: string;
  sessionId: string;
}

/** A skill: its name, description and `SKILL.md` (the model reads the body when used). */
export interface SkillInfo {
  description: string;
  modelInvocable?: boolean;
  name: string;
  origin: "cody" | "claude" | "codex" | "agents";
  path: string;
  scope: "user" | "project";
  userInvocable?: boolean;
}

/** `_cody/session/steer`: add a user message to the running turn (docs/protocol.md). */
export interface SteerParams {
  prompt: (TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource)[];
  sessionId: string;
}

/** `SteerResult` */
export interface SteerResult {
  turnId: string;
}

/** The final answer of a turn run with `_meta.cody.outputSchema`. */
export interface StructuredOutput {
  errors?: string[];
  text?: string | null;
  valid: boolean;
  value?: Json;
  via?: "response_format" | "tool";
}

/**
 * What the session's child sessions (subagents) used so far: part of `usage.total` and
 * `cost.total`, shown apart.
 */
export interface SubagentTotals {
  cost?: number | null;
  sessions?: number;
  usage: TokenUsage;
}

/** `TerminalExitMeta` */
export interface TerminalExitMeta {
  exit_code?: number | null;
  signal?: string | null;
  terminal_id: string;
}

/** `TerminalInfoMeta` */
export interface TerminalInfoMeta {
  cwd?: string | null;
  terminal_id: string;
}

/** `TerminalOutputMeta` */
export interface TerminalOutputMeta {
  data: string;
  terminal_id: string;
}

/**
 * A terminal shown in the tool call, by id.
 *
 * Cody never asks the client to run anything (`terminal/create`): the id names the
 * display-only terminal announced in the `tool_call`'s `_meta.terminal_info` (the Zed
 * convention), and the command's output reaches it through `_meta.terminal_output`.
 */
export interface TerminalToolCallContent {
  terminalId: string;
  type: "terminal";
}

/** `TextContent` */
export interface TextContent {
  annotations?: { [key: string]: Json } | null;
  text: string;
  type: "text";
}

/** `TextResourceContents` */
export interface TextResourceContents {
  mimeType?: string | null;
  text: string;
  uri: string;
}

/** `TokenUsage` */
export interface TokenUsage {
  cachedReadTokens?: number;
  cachedWriteTokens?: number;
  inputTokens?: number;
  outputTokens?: number;
  thoughtTokens?: number;
  totalTokens?: number;
}

/** `_meta.cody.decision` of a `tool_call_update`: what decided whether the call ran. */
export interface ToolCallDecision {
  by: "rule" | "hook" | "grant" | "policy" | "sandbox" | "allowlist" | "user" | "timeout";
  detail: string;
  outcome: "allow" | "deny";
}

/** `ToolCallLocation` */
export interface ToolCallLocation {
  line?: number | null;
  path: string;
}

/** `tool_call`: the model asked for a tool (or, on replay, the call's final state). */
export interface ToolCallStart {
  _meta?: { [key: string]: Json } | null;
  content?: (ContentToolCallContent | DiffToolCallContent | TerminalToolCallContent)[] | null;
  kind?: "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "other";
  locations?: ToolCallLocation[] | null;
  rawInput?: Json;
  rawOutput?: Json;
  sessionUpdate: "tool_call";
  status?: "pending" | "in_progress" | "completed" | "failed";
  title: string;
  toolCallId: string;
}

/** `tool_call_update`: only the fields that changed. */
export interface ToolCallUpdate {
  _meta?: { [key: string]: Json } | null;
  content?: (ContentToolCallContent | DiffToolCallContent | TerminalToolCallContent)[] | null;
  kind?: "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "other" | null;
  locations?: ToolCallLocation[] | null;
  rawInput?: Json;
  rawOutput?: Json;
  sessionUpdate: "tool_call_update";
  status?: "pending" | "in_progress" | "completed" | "failed" | null;
  title?: string | null;
  toolCallId: string;
}

/** `ToolInfo` */
export interface ToolInfo {
  description: string;
  name: string;
  requiresApproval: boolean;
  schema: { [key: string]: Json };
}

/** `ToolsListParams` */
export interface ToolsListParams {
  sessionId?: string | null;
}

/** `ToolsListResult` */
export interface ToolsListResult {
  absent?: AbsentTool[];
  mcpServers?: McpServerStatus[];
  tools: ToolInfo[];
}

/**
 * Cost in USD from the shipped price table; absent when the model has no known price
 * or the calls are not billed per token (a ChatGPT or Claude subscription login).
 */
export interface TurnCost {
  currency?: string;
  last: number;
  total: number;
  turn: number;
}

/** `TurnUsage` */
export interface TurnUsage {
  last: TokenUsage;
  total: TokenUsage;
  turn: TokenUsage;
}

/** `UpdateMeta` */
export interface UpdateMeta {
  cody?: CodyUpdateMeta | null;
}

/** `UsageUpdate` */
export interface UsageUpdate {
  cost?: Cost | null;
  sessionUpdate: "usage_update";
  size: number;
  used: number;
}

/** `UserMessageChunk` */
export interface UserMessageChunk {
  _meta?: UserMessageMeta | null;
  content: TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource;
  messageId?: string | null;
  sessionUpdate: "user_message_chunk";
}

/** `UserMessageMeta` */
export interface UserMessageMeta {
  cody?: CodyUserMessageMeta | null;
}

/** `WorktreeChange` */
export interface WorktreeChange {
  change: "added" | "modified" | "deleted" | "renamed" | "untracked";
  path: string;
}

/** Where a worktree session runs, and what it changed. */
export interface WorktreeInfo {
  base: string;
  branch: string;
  changes?: WorktreeChange[];
  commits?: number;
  kept?: boolean | null;
  path: string;
  projectRoot: string;
}

/** `WorktreeParams` */
export interface WorktreeParams {
  sessionId: string;
}

/** `WorktreeResult` */
export interface WorktreeResult {
  worktree?: WorktreeInfo | null;
}

/** `WriteTextFileParams` */
export interface WriteTextFileParams {
  content: string;
  path: string;
  sessionId: string;
}

/** `session/list` entries' `_meta.cody`: where a fork came from, whose child it is. */
export interface cody_protocol__session__CodySessionInfoMeta {
  atMessage?: number | null;
  forkedFrom?: string | null;
  parentSessionId?: string | null;
}

/** `cody_protocol__updates__CodySessionInfoMeta` */
export interface cody_protocol__updates__CodySessionInfoMeta {
  compaction?: CompactionNotice | null;
}

/** Every JSON-RPC error code the daemon sends (docs/protocol.md, "Errors"). */
export const ErrorCode = {
  AuthRequired: -32000,
  InternalError: -32603,
  InvalidParams: -32602,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  NotFound: -32002,
  ParseError: -32700,
  ProviderError: -32010,
  RequestCancelled: -32800,
  SessionBusy: -32011,
} as const;

/** Every method on the wire (cody_protocol.methods.METHODS). */
export const Method = {
  cancelRequestLsp: "$/cancelRequest",
  cancelRequestAcp: "$/cancel_request",
  codyAgentsList: "_cody/agents/list",
  codyConfigCheck: "_cody/config/check",
  codyDiagnostics: "_cody/diagnostics",
  codyFilesSearch: "_cody/files/search",
  codyHistoryImport: "_cody/history/import",
  codyHistoryList: "_cody/history/list",
  codyHistoryRead: "_cody/history/read",
  codyHookStatus: "_cody/hook/status",
  codyLspServers: "_cody/lsp/servers",
  codyMcpElicit: "_cody/mcp/elicit",
  codyMcpStatus: "_cody/mcp/status",
  codyModelsList: "_cody/models/list",
  codyPermissionsList: "_cody/permissions/list",
  codyPermissionsRemove: "_cody/permissions/remove",
  codyProcessKill: "_cody/process/kill",
  codySessionCheckpointDiff: "_cody/session/checkpointDiff",
  codySessionCheckpoints: "_cody/session/checkpoints",
  codySessionCompact: "_cody/session/compact",
  codySessionFork: "_cody/session/fork",
  codySessionHistory: "_cody/session/history",
  codySessionProcesses: "_cody/session/processes",
  codySessionRewind: "_cody/session/rewind",
  codySessionSteer: "_cody/session/steer",
  codySessionWorktree: "_cody/session/worktree",
  codyToolsList: "_cody/tools/list",
  authenticate: "authenticate",
  exit: "exit",
  fsReadTextFile: "fs/read_text_file",
  fsWriteTextFile: "fs/write_text_file",
  initialize: "initialize",
  logout: "logout",
  sessionCancel: "session/cancel",
  sessionClose: "session/close",
  sessionDelete: "session/delete",
  sessionFork: "session/fork",
  sessionList: "session/list",
  sessionLoad: "session/load",
  sessionNew: "session/new",
  sessionPrompt: "session/prompt",
  sessionRequestPermission: "session/request_permission",
  sessionResume: "session/resume",
  sessionSetConfigOption: "session/set_config_option",
  sessionSetMode: "session/set_mode",
  sessionUpdate: "session/update",
  shutdown: "shutdown",
} as const;
