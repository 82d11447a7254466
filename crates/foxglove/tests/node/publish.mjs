// A real Foxglove protocol client publishing into `nerve foxglove` (client publish). Usage:
//   node publish.mjs ws://HOST:PORT TOPIC SCHEMA_NAME MESSAGES.json
// MESSAGES: an array of strings, each sent as one message's bytes on a channel the client advertises with
// `json` encoding and SCHEMA_NAME. Prints one JSON line: the server's capabilities and every status it sent.
import { readFileSync } from "node:fs";
import wsProtocol from "@foxglove/ws-protocol";
import WebSocket from "ws";

const { FoxgloveClient } = wsProtocol;
const [url, topic, schemaName, messagesPath] = process.argv.slice(2);
const messages = JSON.parse(readFileSync(messagesPath, "utf8"));
const result = { capabilities: null, statuses: [] };
const done = () => {
  console.log(JSON.stringify(result));
  process.exit(0);
};
setTimeout(done, 15000);

const client = new FoxgloveClient({ ws: new WebSocket(url, ["foxglove.sdk.v1"]) });
client.on("status", (s) => result.statuses.push(s.message));
client.on("serverInfo", async (info) => {
  result.capabilities = info.capabilities;
  const channel = client.advertise({ topic, encoding: "json", schemaName });
  const encoder = new TextEncoder();
  for (const m of messages) {
    await new Promise((r) => setTimeout(r, 50));
    client.sendMessage(channel, encoder.encode(m));
  }
  setTimeout(done, 1000);
});
