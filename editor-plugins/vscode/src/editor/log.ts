/**
 * The Cody log channel, behind a wrapper whose methods never throw.
 *
 * VS Code closes an extension's channels while its extension host shuts down (it disposes the
 * extension's subscriptions right after calling `deactivate()`, without waiting for it), and a
 * write to a closed channel throws `Channel has been closed`. A protocol trace line written
 * from inside vscode-jsonrpc's reply handling must not throw, or the reply is lost (that is how
 * `shutdown` once never got its `exit` and VS Code killed the daemon after 5 s).
 *
 * Invariants: every method returns normally whatever the channel does; a line that cannot be
 * written is dropped. The channel itself is disposed by `dispose()` only, which extension.ts
 * calls at the end of `deactivate()`. Every message is written inert (src/inert.ts): daemon
 * stderr, errors and traces carry model and file text.
 */

import type * as vscode from "vscode";

import { inert } from "../inert";

export interface CodyLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  show(preserveFocus: boolean): void;
  dispose(): void;
}

export function safeLog(channel: vscode.LogOutputChannel): CodyLog {
  let closed = false;
  const guarded = (write: () => void): void => {
    if (closed) return;
    try {
      write();
    } catch {
      closed = true; // the channel is gone; later lines have nowhere to go either
    }
  };
  return {
    info: (message) => {
      guarded(() => {
        channel.info(inert(message));
      });
    },
    warn: (message) => {
      guarded(() => {
        channel.warn(inert(message));
      });
    },
    error: (message) => {
      guarded(() => {
        channel.error(inert(message));
      });
    },
    show: (preserveFocus) => {
      guarded(() => {
        channel.show(preserveFocus);
      });
    },
    dispose: () => {
      closed = true;
      try {
        channel.dispose();
      } catch {
        // already closed
      }
    },
  };
}
