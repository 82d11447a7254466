// A real Foxglove protocol client (@foxglove/ws-protocol's FoxgloveClient, over the `ws` package) against
// `nerve foxglove`. Usage: node client.mjs ws://HOST:PORT SPEC.json
// SPEC: {"channels": {NAME: {"schemaName": S, "messages": [JSON values], "ignore": [KEYS]}}, "timeoutMs": N}
// Waits until every channel in SPEC is advertised (with that schema name, JSON encoding and a JSON schema),
// subscribes to each, and checks that every message received equals one of the channel's expected messages and
// that every expected message arrives. Prints one JSON line of results; exits 0 on success, 1 otherwise. The results
// also give the server's capabilities, the time messages it broadcast (the `time` capability: count, first, last,
// whether one went back) and each channel's message timestamps (lowest, highest), in nanoseconds as strings.
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import wsProtocol from "@foxglove/ws-protocol";
import WebSocket from "ws";

const { FoxgloveClient } = wsProtocol;

const [url, specPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));
const wanted = Object.keys(spec.channels);
const advertised = new Map(); // topic -> channel
const subscribedTo = new Map(); // subscription id -> topic
const seen = new Map(wanted.map((t) => [t, new Set()])); // topic -> indices of expected messages seen
const counts = new Map(wanted.map((t) => [t, 0]));
const problems = [];
let capabilities = null;
const times = { count: 0, first: null, last: null, backwards: 0 };
const stamps = new Map(); // topic -> [lowest, highest] message timestamp (BigInt ns)

function finish(ok) {
  const result = {
    ok: ok && problems.length === 0,
    advertised: [...advertised.keys()].sort(),
    received: Object.fromEntries(counts),
    problems: problems.slice(0, 20),
    capabilities,
    times: { ...times, first: times.first?.toString() ?? null, last: times.last?.toString() ?? null },
    stamps: Object.fromEntries([...stamps].map(([t, [lo, hi]]) => [t, [lo.toString(), hi.toString()]])),
  };
  console.log(JSON.stringify(result));
  process.exit(result.ok ? 0 : 1);
}

setTimeout(() => {
  const missing = wanted.filter((t) => seen.get(t).size < spec.channels[t].messages.length);
  problems.push(`timed out; channels missing messages: ${missing.join(", ") || "(none)"}`);
  finish(false);
}, spec.timeoutMs ?? 15000);

// The SDK speaks the protocol under the subprotocol name "foxglove.sdk.v1"; the messages are the same.
const ws = new WebSocket(url, ["foxglove.sdk.v1"]);
const client = new FoxgloveClient({ ws });
client.on("error", (e) => {
  problems.push(`client error: ${e}`);
  finish(false);
});
client.on("serverInfo", (info) => {
  capabilities = info.capabilities;
});
client.on("time", ({ timestamp }) => {
  if (times.last !== null && timestamp < times.last) times.backwards++;
  times.first ??= timestamp;
  times.last = timestamp;
  times.count++;
});
client.on("advertise", (channels) => {
  for (const ch of channels) {
    advertised.set(ch.topic, ch);
    const want = spec.channels[ch.topic];
    if (!want || [...subscribedTo.values()].includes(ch.topic)) continue;
    if (ch.encoding !== "json") problems.push(`${ch.topic}: encoding ${ch.encoding}`);
    if (ch.schemaName !== want.schemaName) problems.push(`${ch.topic}: schema name ${ch.schemaName}`);
    if (ch.schemaEncoding !== "jsonschema") problems.push(`${ch.topic}: schema encoding ${ch.schemaEncoding}`);
    try {
      const schema = JSON.parse(ch.schema);
      if (schema.type !== "object") problems.push(`${ch.topic}: schema is not an object schema`);
    } catch (e) {
      problems.push(`${ch.topic}: schema is not JSON: ${e}`);
    }
    subscribedTo.set(client.subscribe(ch.id), ch.topic);
  }
});
const decoder = new TextDecoder();
client.on("message", ({ subscriptionId, timestamp, data }) => {
  const topic = subscribedTo.get(subscriptionId);
  if (topic === undefined) {
    problems.push(`message for unknown subscription ${subscriptionId}`);
    return;
  }
  counts.set(topic, counts.get(topic) + 1);
  const range = stamps.get(topic);
  if (!range) stamps.set(topic, [timestamp, timestamp]);
  else if (timestamp < range[0]) range[0] = timestamp;
  else if (timestamp > range[1]) range[1] = timestamp;
  let value;
  try {
    value = JSON.parse(decoder.decode(data));
  } catch (e) {
    problems.push(`${topic}: message is not JSON: ${e}`);
    return;
  }
  // Members whose text is not the test's to predict (an undecoded message's reason) are left out of the comparison.
  for (const key of spec.channels[topic].ignore ?? []) delete value[key];
  const expected = spec.channels[topic].messages;
  const i = expected.findIndex((m) => isDeepStrictEqual(m, value));
  if (i < 0) {
    problems.push(`${topic}: unexpected message ${JSON.stringify(value)}`);
    return;
  }
  seen.get(topic).add(i);
  if (wanted.every((t) => seen.get(t).size === spec.channels[t].messages.length)) finish(true);
});
