/** The protocol layer: a typed Cody client with no `vscode` dependency. */

export * from "./types";
export { CodyError, toCodyError, type CodyErrorKind } from "./errors";
export { DaemonProcess, describeExit, type DaemonCommand, type ExitInfo } from "./process";
export {
  CodyClient,
  type ApprovalHandler,
  type CodyClientOptions,
  type MessageObserver,
  type NewSessionOptions,
  type TraceLevel,
} from "./client";
