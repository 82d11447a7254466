// A real Foxglove protocol client (@foxglove/ws-protocol's FoxgloveClient, over `ws`) reading `nerve foxglove`'s
// mapped channels: the ones in Foxglove's well-known schemas, protobuf-encoded. Usage: node mapped.mjs URL SPEC.json
// SPEC: {"topics": {TOPIC: {"schemaName": S, "expect": OBJECT | null}}, "raw": [TOPIC...], "timeoutMs": N}
// Waits until every topic is advertised (protobuf encoding, protobuf schema named S), builds the message type from
// the FileDescriptorSet the server advertised (protobufjs), subscribes, and decodes what arrives: the first
// message on a topic must equal OBJECT in every field (protobufjs' toObject with defaults, bytes as arrays); a
// topic whose OBJECT is null must receive nothing (its messages were inconsistent). The `raw` topics must be
// advertised too, as JSON (the raw view stays). Prints one JSON line of results; exits 0 on success, 1 otherwise.
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import wsProtocol from "@foxglove/ws-protocol";
import protobuf from "protobufjs";
import descriptor from "protobufjs/ext/descriptor/index.js";
import WebSocket from "ws";

const { FoxgloveClient } = wsProtocol;

const [url, specPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));
const wanted = Object.keys(spec.topics);
const advertised = new Map(); // topic -> channel
const types = new Map(); // subscription id -> [topic, protobufjs Type]
const matched = new Set(); // topics whose expected message arrived
const counts = Object.fromEntries(wanted.map((t) => [t, 0]));
const problems = [];
const startedAt = Date.now();

function finish() {
  const result = {
    ok: problems.length === 0,
    advertised: [...advertised.keys()].sort(),
    received: counts,
    problems: problems.slice(0, 20),
  };
  console.log(JSON.stringify(result));
  process.exit(result.ok ? 0 : 1);
}

function check() {
  const waiting = wanted.filter((t) => spec.topics[t].expect !== null && !matched.has(t));
  const rawMissing = (spec.raw ?? []).filter((t) => advertised.get(t)?.encoding !== "json");
  // Topics that must stay empty are watched for a while after the others arrived (the same publisher sends both).
  if (waiting.length === 0 && rawMissing.length === 0 && Date.now() - startedAt > (spec.quietMs ?? 300)) finish();
}

setTimeout(() => {
  const waiting = wanted.filter((t) => spec.topics[t].expect !== null && !matched.has(t));
  problems.push(`timed out; waiting for: ${waiting.join(", ") || "(none)"}`);
  finish();
}, spec.timeoutMs ?? 15000);
setInterval(check, 50);

const ws = new WebSocket(url, ["foxglove.sdk.v1"]);
const client = new FoxgloveClient({ ws });
client.on("error", (e) => {
  problems.push(`client error: ${e}`);
  finish();
});
client.on("advertise", (channels) => {
  for (const ch of channels) {
    advertised.set(ch.topic, ch);
    const want = spec.topics[ch.topic];
    if (!want || [...types.values()].some(([t]) => t === ch.topic)) continue;
    if (ch.encoding !== "protobuf") problems.push(`${ch.topic}: encoding ${ch.encoding}`);
    if (ch.schemaName !== want.schemaName) problems.push(`${ch.topic}: schema name ${ch.schemaName}`);
    if (ch.schemaEncoding !== "protobuf") problems.push(`${ch.topic}: schema encoding ${ch.schemaEncoding}`);
    let type;
    try {
      // The protocol carries a binary schema (a FileDescriptorSet) in base64.
      const set = descriptor.FileDescriptorSet.decode(Buffer.from(ch.schema, "base64"));
      type = protobuf.Root.fromDescriptor(set).lookupType(ch.schemaName);
    } catch (e) {
      problems.push(`${ch.topic}: the advertised schema is not a FileDescriptorSet with ${ch.schemaName}: ${e}`);
      continue;
    }
    types.set(client.subscribe(ch.id), [ch.topic, type]);
  }
});
client.on("message", ({ subscriptionId, data }) => {
  const entry = types.get(subscriptionId);
  if (entry === undefined) {
    problems.push(`message for unknown subscription ${subscriptionId}`);
    return;
  }
  const [topic, type] = entry;
  counts[topic] += 1;
  const want = spec.topics[topic].expect;
  if (want === null) {
    problems.push(`${topic}: a message arrived on a channel whose messages are all inconsistent`);
    return;
  }
  let value;
  try {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    value = type.toObject(type.decode(bytes), { longs: Number, bytes: Array, defaults: true });
  } catch (e) {
    problems.push(`${topic}: not a ${type.fullName}: ${e}`);
    return;
  }
  if (matched.has(topic)) return;
  // Through JSON, as the expectation came (plain objects and arrays, no protobufjs prototypes).
  const got = JSON.parse(JSON.stringify(value));
  if (isDeepStrictEqual(got, want)) {
    matched.add(topic);
  } else {
    const keys = [...new Set([...Object.keys(got), ...Object.keys(want)])].sort();
    const differ = keys.filter((k) => !isDeepStrictEqual(got[k], want[k]));
    const show = (o) => JSON.stringify(Object.fromEntries(differ.map((k) => [k, o[k]]))).slice(0, 600);
    problems.push(`${topic}: fields ${differ.join(", ")} differ: got ${show(got)}, want ${show(want)}`);
    finish();
  }
});
