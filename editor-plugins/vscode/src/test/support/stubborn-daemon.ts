/**
 * A fake daemon for the shutdown test: answers `initialize`, never answers `shutdown`,
 * ignores `exit` and SIGTERM. Only SIGKILL ends it.
 */

import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from "vscode-jsonrpc/node";

process.on("SIGTERM", () => {
  process.stderr.write("stubborn: ignoring SIGTERM\n");
});
const connection = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
connection.onRequest("initialize", () => ({
  protocolVersion: 1,
  agentInfo: { name: "stubborn", version: "0" },
  _meta: { cody: { version: "0", extensions: [], providers: [], defaultProvider: "offline", dataDir: "/", configFile: "/" } },
}));
connection.onRequest("shutdown", () => new Promise<never>(() => undefined));
connection.listen();
setInterval(() => undefined, 1000);
