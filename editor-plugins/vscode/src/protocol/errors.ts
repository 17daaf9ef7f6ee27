/**
 * Errors of the protocol layer, turned into text a user can act on.
 *
 * Invariant: every failure the client reports is a `CodyError` whose `message` is readable
 * on its own (no stack, no JSON), with the daemon's structured `data` rendered into `detail`.
 */

import { ResponseError } from "vscode-jsonrpc/node";

import { ErrorCode, type AuthRequiredData, type InvalidParamsData, type Json, type ProviderErrorData } from "./types";

export type CodyErrorKind =
  | "daemon" // the daemon could not start, exited or the connection closed
  | "config" // -32602: invalid parameters or configuration
  | "auth" // -32000: no credentials
  | "provider" // -32010: the model provider failed
  | "not_found" // -32002
  | "busy" // -32011
  | "cancelled" // -32800
  | "protocol"; // anything else

/** A failure of the daemon or of one request, with a message fit for the chat view. */
export class CodyError extends Error {
  readonly kind: CodyErrorKind;
  readonly code: number | undefined;
  readonly data: Json | undefined;
  /** Extra lines: the fields at fault, how to fix it. */
  readonly detail: string[];

  constructor(kind: CodyErrorKind, message: string, options: { code?: number; data?: Json; detail?: string[] } = {}) {
    super(message);
    this.name = "CodyError";
    this.kind = kind;
    this.code = options.code;
    this.data = options.data;
    this.detail = options.detail ?? [];
  }

  /** The message and its detail lines, as one text. */
  describe(): string {
    return [this.message, ...this.detail].join("\n");
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function asInvalidParams(data: unknown): InvalidParamsData | undefined {
  if (isRecord(data) && Array.isArray(data.errors)) {
    return data as unknown as InvalidParamsData;
  }
  return undefined;
}

function asAuthRequired(data: unknown): AuthRequiredData | undefined {
  if (isRecord(data) && typeof data.fix === "string" && typeof data.provider === "string") {
    return data as unknown as AuthRequiredData;
  }
  return undefined;
}

function asProviderError(data: unknown): ProviderErrorData | undefined {
  if (isRecord(data) && typeof data.kind === "string" && typeof data.provider === "string") {
    return data as unknown as ProviderErrorData;
  }
  return undefined;
}

function show(value: Json | undefined): string {
  return typeof value === "string" ? `"${value}"` : JSON.stringify(value);
}

function kindOf(code: number): CodyErrorKind {
  switch (code) {
    case ErrorCode.InvalidParams:
      return "config";
    case ErrorCode.AuthRequired:
      return "auth";
    case ErrorCode.ProviderError:
      return "provider";
    case ErrorCode.NotFound:
      return "not_found";
    case ErrorCode.SessionBusy:
      return "busy";
    case ErrorCode.RequestCancelled:
      return "cancelled";
    default:
      return "protocol";
  }
}

/** Turn a JSON-RPC error answer into a `CodyError` with readable detail lines. */
export function fromResponseError(error: ResponseError<unknown>): CodyError {
  const data = error.data as Json | undefined;
  const detail: string[] = [];
  const invalid = asInvalidParams(data);
  const auth = asAuthRequired(data);
  const provider = asProviderError(data);
  if (invalid) {
    for (const issue of invalid.errors) {
      let line = `${issue.key}: ${issue.message}`;
      if (issue.value !== undefined && issue.value !== null) line += ` (got ${show(issue.value)})`;
      if (issue.valid && issue.valid.length > 0) line += `; valid values: ${issue.valid.map(String).join(", ")}`;
      if (issue.source) line += ` [${issue.source}]`;
      detail.push(line);
    }
  } else if (auth && !error.message.includes(auth.fix)) {
    detail.push(auth.fix);
  } else if (provider) {
    const status = provider.httpStatus ? `, HTTP ${String(provider.httpStatus)}` : "";
    detail.push(`provider ${provider.provider}: ${provider.kind}${status}${provider.retryable ? " (retryable)" : ""}`);
  }
  return new CodyError(kindOf(error.code), error.message, { code: error.code, data, detail });
}

/** Any thrown value as a `CodyError` (connection errors, spawn errors, response errors). */
export function toCodyError(error: unknown): CodyError {
  if (error instanceof CodyError) return error;
  if (error instanceof ResponseError) return fromResponseError(error);
  if (error instanceof Error) return new CodyError("daemon", error.message);
  return new CodyError("daemon", String(error));
}
