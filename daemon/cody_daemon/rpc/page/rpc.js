// JSON-RPC 2.0 over the daemon's WebSocket: one message per text frame (docs/web.md).
//
// `request()` resolves with the result or rejects with an RpcError (code, message, data);
// the daemon's requests (approvals) go to the handler registered with `onRequest`, whose
// return value (or thrown RpcError) is the answer; a `$/cancel_request` from the daemon
// aborts that handler's signal. Notifications go to `onNotification` handlers in order.

export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export class Rpc {
  constructor(url) {
    this.url = url;
    this.nextId = 1;
    this.pending = new Map();
    this.requestHandlers = new Map();
    this.notificationHandlers = new Map();
    this.incoming = new Map();
    this.onClose = () => {};
    this.socket = null;
  }

  /** Open the socket; resolves once open, rejects when it cannot be opened. */
  open() {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url);
      this.socket = socket;
      let opened = false;
      socket.addEventListener("open", () => {
        opened = true;
        resolve();
      });
      socket.addEventListener("message", (event) => this.receive(event.data));
      socket.addEventListener("close", (event) => {
        for (const { reject: fail } of this.pending.values()) fail(new RpcError(-32099, "the connection to the daemon closed"));
        this.pending.clear();
        for (const controller of this.incoming.values()) controller.abort();
        this.incoming.clear();
        if (!opened) reject(new Error(`the daemon refused the connection (code ${event.code})`));
        else this.onClose(event);
      });
    });
  }

  close() {
    this.socket?.close();
  }

  onRequest(method, handler) {
    this.requestHandlers.set(method, handler);
  }

  onNotification(method, handler) {
    const list = this.notificationHandlers.get(method) ?? [];
    list.push(handler);
    this.notificationHandlers.set(method, list);
  }

  send(message) {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.socket?.readyState !== WebSocket.OPEN) {
        reject(new RpcError(-32099, "not connected to the daemon"));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method, params) {
    this.send({ jsonrpc: "2.0", method, params });
  }

  receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      console.warn("ignoring a message that is not JSON");
      return;
    }
    if (typeof message !== "object" || message === null) return;
    if (message.method === undefined) {
      const waiting = this.pending.get(message.id);
      if (!waiting) return;
      this.pending.delete(message.id);
      if (message.error) {
        const error = message.error;
        waiting.reject(new RpcError(error.code ?? -32603, String(error.message ?? "error"), error.data));
      } else waiting.resolve(message.result);
      return;
    }
    if (message.id !== undefined) {
      this.answer(message.id, message.method, message.params);
      return;
    }
    if (message.method === "$/cancel_request" || message.method === "$/cancelRequest") {
      const target = message.params?.requestId ?? message.params?.id;
      this.incoming.get(target)?.abort();
      this.incoming.delete(target);
      return;
    }
    for (const handler of this.notificationHandlers.get(message.method) ?? []) {
      try {
        handler(message.params);
      } catch (error) {
        console.error(`the ${message.method} handler failed`, error);
      }
    }
  }

  async answer(id, method, params) {
    const handler = this.requestHandlers.get(method);
    if (!handler) {
      this.send({ jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${method}` } });
      return;
    }
    const controller = new AbortController();
    this.incoming.set(id, controller);
    try {
      const result = await handler(params, controller.signal);
      if (!controller.signal.aborted) this.send({ jsonrpc: "2.0", id, result });
    } catch (error) {
      if (controller.signal.aborted) return;
      const code = error instanceof RpcError ? error.code : -32603;
      this.send({ jsonrpc: "2.0", id, error: { code, message: String(error?.message ?? error) } });
    } finally {
      this.incoming.delete(id);
    }
  }
}
