// The page's logic: the spy's table (from the server channel /nerve/spy), the open channel's newest message as a
// tree, live plots of the numeric fields ticked in it (uPlot), and its picture when the server also sends it in
// one of Foxglove's well-known schemas (an image drawn on a canvas; a laser scan or point cloud as a top-down plot),
// decoded with protobufjs from the schema the server advertises. It speaks the Foxglove WebSocket protocol to the
// server that served it: the JSON control messages and the binary message-data frame of
// github.com/foxglove/ws-protocol docs/spec.md. That small part is written here rather than taken from
// @foxglove/ws-protocol because the page ships as plain files with no bundler; the tests check the server with
// Foxglove's own client, and this page in a real browser.
"use strict";

const SPY_TOPIC = "/nerve/spy";
const MAX_ARRAY_ITEMS = 16; // items of an array shown in the tree; the rest are summarised
const MAX_STRING = 80; // characters of a string shown in the tree
const COLORS = ["#0b5cad", "#d9480f", "#2b8a3e", "#862e9c", "#c92a2a", "#1098ad", "#e67700", "#495057"];

const state = {
  ws: null,
  channels: new Map(), // advertised channel id -> channel
  byTopic: new Map(), // topic -> newest advertised channel
  subs: new Map(), // topic -> {id, channelId}
  subTopic: new Map(), // subscription id -> topic
  nextSub: 1,
  open: null, // the topic whose newest message is shown
  latest: null,
  treeDirty: false,
  shape: "", // the paths of the tree on screen: rebuilt only when they change
  leaves: new Map(), // path -> the element showing its value
  picked: [], // fields plotted: {topic, path}
  xs: [], // plot rows: receive time (s), then one value (or null) per picked field
  ys: [],
  plotDirty: false,
  paused: false,
  chart: null,
  // The open channel's picture: the mapped channel shown (`<channel>/foxglove.RawImage`, ...), its newest message
  // (bytes, decoded at the next frame only: a 30 Hz camera costs no more than the screen shows), and what was last
  // drawn (for the browser test: the kind, and for a scan or cloud the points and where each went on the canvas).
  view: { topic: null, latest: null, dirty: false, drawn: null, error: null },
  types: new Map(), // advertised channel id -> its protobuf type, built from the channel's FileDescriptorSet
};

/// The well-known schemas the page draws (the server's mapped channels: protobuf, Foxglove's own schemas).
const PICTURES = new Set(["foxglove.RawImage", "foxglove.CompressedImage", "foxglove.LaserScan", "foxglove.PointCloud"]);
const POINT_COLOR = [217, 72, 15]; // the scan plot's points (#d9480f)

const $ = (id) => document.getElementById(id);
const text = new TextDecoder();

function connect() {
  const ws = new WebSocket(`ws://${location.host}/`, ["foxglove.sdk.v1"]);
  ws.binaryType = "arraybuffer";
  state.ws = ws;
  ws.onopen = () => setStatus("live", "ok");
  ws.onclose = () => {
    setStatus("disconnected: retrying", "bad");
    state.channels.clear();
    state.types.clear();
    state.byTopic.clear();
    state.subs.clear();
    state.subTopic.clear();
    setTimeout(connect, 1000);
  };
  ws.onmessage = (ev) => (typeof ev.data === "string" ? control(JSON.parse(ev.data)) : data(ev.data));
}

function setStatus(what, cls) {
  const s = $("status");
  s.textContent = what;
  s.className = `status ${cls}`;
}

function send(msg) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(msg));
}

function control(msg) {
  switch (msg.op) {
    case "advertise":
      for (const ch of msg.channels) {
        state.channels.set(ch.id, ch);
        state.byTopic.set(ch.topic, ch);
      }
      break;
    case "unadvertise":
      for (const id of msg.channelIds) {
        const ch = state.channels.get(id);
        state.channels.delete(id);
        state.types.delete(id);
        if (ch && state.byTopic.get(ch.topic) === ch) state.byTopic.delete(ch.topic);
      }
      break;
    case "status":
      if (msg.level >= 2) setStatus(msg.message, "bad");
      return;
    default:
      return;
  }
  pickView();
  syncSubscriptions();
}

/// Subscribed to exactly the topics the page needs: the spy table, the open channel, the plotted channels.
function syncSubscriptions() {
  const wanted = new Set([SPY_TOPIC, ...state.picked.map((p) => p.topic)]);
  if (state.open) wanted.add(state.open);
  if (state.view.topic) wanted.add(state.view.topic);
  for (const [topic, sub] of state.subs) {
    const ch = state.byTopic.get(topic);
    if (!wanted.has(topic) || !ch || ch.id !== sub.channelId) {
      send({ op: "unsubscribe", subscriptionIds: [sub.id] });
      state.subs.delete(topic);
      state.subTopic.delete(sub.id);
    }
  }
  for (const topic of wanted) {
    const ch = state.byTopic.get(topic);
    if (!ch || state.subs.has(topic)) continue;
    const id = state.nextSub++;
    state.subs.set(topic, { id, channelId: ch.id });
    state.subTopic.set(id, topic);
    send({ op: "subscribe", subscriptions: [{ id, channelId: ch.id }] });
  }
}

function data(buf) {
  const view = new DataView(buf);
  if (buf.byteLength < 13 || view.getUint8(0) !== 1) return; // only message data (opcode 1) is used
  const topic = state.subTopic.get(view.getUint32(1, true));
  if (topic === undefined) return;
  // A picture is protobuf, not JSON: kept as bytes and decoded when the next frame draws it.
  if (topic === state.view.topic) {
    state.view.latest = { channelId: state.subs.get(topic).channelId, bytes: new Uint8Array(buf, 13) };
    state.view.dirty = true;
    return;
  }
  const t = Number(view.getBigUint64(5, true)) / 1e9;
  let value;
  try {
    value = JSON.parse(text.decode(new Uint8Array(buf, 13)));
  } catch {
    return;
  }
  if (topic === SPY_TOPIC) {
    renderTable(value);
    return;
  }
  if (topic === state.open) {
    state.latest = value;
    state.treeDirty = true;
  }
  if (state.picked.some((p) => p.topic === topic)) record(topic, t, value);
}

// ---- the channel table ----

function rate(x) {
  return x == null ? "-" : x.toFixed(1);
}
function jitter(us) {
  if (us == null) return "-";
  return us >= 1000 ? `${(us / 1000).toFixed(1)} ms` : `${us.toFixed(0)} µs`;
}
function bandwidth(bps) {
  if (bps == null) return "-";
  const units = ["B/s", "kB/s", "MB/s", "GB/s"];
  let i = 0;
  while (bps >= 1000 && i < units.length - 1) {
    bps /= 1000;
    i++;
  }
  return `${bps.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/// Updates the table in place (rows are kept, cells rewritten), so a row being clicked is never replaced.
function renderTable(report) {
  $("url").textContent = report.url;
  const body = document.querySelector("#channels tbody");
  const present = new Set();
  for (const c of report.channels) {
    present.add(c.channel);
    let tr = [...body.children].find((r) => r.dataset.channel === c.channel);
    if (!tr) {
      tr = document.createElement("tr");
      tr.dataset.channel = c.channel;
      for (let i = 0; i < 7; i++) {
        const td = document.createElement("td");
        if (i >= 2) td.className = "num";
        tr.appendChild(td);
      }
      const after = [...body.children].find((r) => r.dataset.channel > c.channel);
      body.insertBefore(tr, after ?? null);
    }
    tr.className = c.channel === state.open ? "open" : "";
    const cells = [
      c.channel,
      c.type ?? (c.fingerprint ? `? ${c.fingerprint}` : "?"),
      c.count,
      rate(c.rate_hz),
      jitter(c.jitter_us),
      bandwidth(c.bandwidth_bps),
      c.decode_errors,
    ];
    cells.forEach((v, i) => {
      if (tr.children[i].textContent !== String(v)) tr.children[i].textContent = String(v);
    });
  }
  for (const tr of [...body.children]) if (!present.has(tr.dataset.channel)) tr.remove();
  const d = report.dropped;
  $("drops").textContent =
    `${report.total} messages; dropped: ${d.queue_overflow} queue overflow, ${d.transport_lost} lost in transport, ` +
    `${d.malformed} malformed, ${d.kernel_dropped} by the kernel`;
  // The server's figures (nerve foxglove adds them): what each client missed by not keeping up.
  const srv = report.server;
  if (srv) {
    const n = srv.clients.length;
    const slow = srv.clients.filter((c) => c.dropped > 0).map((c) => `${c.peer} ${c.dropped} of ${c.sent + c.dropped + c.queued}`);
    $("clients").textContent =
      `${n} client${n === 1 ? "" : "s"} connected; ${srv.client_dropped} messages dropped for slow clients` +
      (slow.length ? ` (${slow.join(", ")})` : "");
  }
}

function openChannel(topic) {
  state.open = topic;
  state.latest = null;
  state.shape = "";
  $("message-title").textContent = topic;
  $("message").replaceChildren();
  for (const tr of document.querySelectorAll("#channels tbody tr")) {
    tr.className = tr.dataset.channel === topic ? "open" : "";
  }
  pickView();
  syncSubscriptions();
}

// ---- the message tree ----

/// Every leaf of `value` as [path, value, isNumber], arrays summarised past MAX_ARRAY_ITEMS.
function leaves(value, path, out) {
  if (Array.isArray(value)) {
    value.slice(0, MAX_ARRAY_ITEMS).forEach((v, i) => leaves(v, `${path}[${i}]`, out));
    if (value.length > MAX_ARRAY_ITEMS) out.push([`${path}[…]`, `… ${value.length} items`, false]);
    if (value.length === 0) out.push([path, "[]", false]);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) leaves(v, path ? `${path}.${k}` : k, out);
  } else {
    out.push([path, value, typeof value === "number"]);
  }
  return out;
}

function show(v) {
  if (typeof v === "string") return v.length > MAX_STRING ? `"${v.slice(0, MAX_STRING)}…" (${v.length} chars)` : `"${v}"`;
  return String(v);
}

function renderTree() {
  if (!state.treeDirty || state.latest === null) return;
  state.treeDirty = false;
  const all = leaves(state.latest, "", []);
  const shape = all.map(([p]) => p).join("\n");
  if (shape !== state.shape) {
    state.shape = shape;
    state.leaves.clear();
    const ul = document.createElement("ul");
    for (const [path, v, numeric] of all) {
      const li = document.createElement("li");
      const label = document.createElement("label");
      if (numeric) {
        const box = document.createElement("input");
        box.type = "checkbox";
        box.dataset.path = path;
        box.checked = state.picked.some((p) => p.topic === state.open && p.path === path);
        label.appendChild(box);
      }
      const key = document.createElement("span");
      key.className = "key";
      key.textContent = `${path}: `;
      const val = document.createElement("span");
      val.className = "value";
      label.append(key, val);
      li.appendChild(label);
      ul.appendChild(li);
      state.leaves.set(path, val);
    }
    $("message").replaceChildren(ul);
  }
  for (const [path, v] of all) state.leaves.get(path).textContent = show(v);
}

// ---- plots ----

function fieldAt(value, path) {
  for (const part of path.match(/[^.[\]]+/g) ?? []) {
    if (value == null) return null;
    value = value[part];
  }
  return typeof value === "number" ? value : null;
}

function record(topic, t, value) {
  state.xs.push(t);
  state.picked.forEach((p, i) => state.ys[i].push(p.topic === topic ? fieldAt(value, p.path) : null));
  const windowS = Math.max(1, Number($("window").value) || 10);
  let drop = 0;
  while (drop < state.xs.length && state.xs[drop] < t - windowS) drop++;
  if (drop > 0) {
    state.xs.splice(0, drop);
    for (const y of state.ys) y.splice(0, drop);
  }
  state.plotDirty = true;
}

function togglePick(topic, path, on) {
  const i = state.picked.findIndex((p) => p.topic === topic && p.path === path);
  if (on && i < 0) {
    state.picked.push({ topic, path });
    state.ys.push(state.xs.map(() => null));
  } else if (!on && i >= 0) {
    state.picked.splice(i, 1);
    state.ys.splice(i, 1);
  }
  makeChart();
  syncSubscriptions();
}

function makeChart() {
  if (state.chart) state.chart.destroy();
  state.chart = null;
  $("plot-title").textContent = state.picked.length ? "" : "tick numeric fields to plot them";
  if (!state.picked.length) return;
  const opts = {
    width: Math.max(300, $("plot-pane").clientWidth - 16),
    height: 280,
    series: [
      {},
      ...state.picked.map((p, i) => ({
        label: `${p.topic} ${p.path}`,
        stroke: COLORS[i % COLORS.length],
        width: 1.5,
        spanGaps: true,
        points: { show: false },
      })),
    ],
    axes: [{}, { size: 60 }],
  };
  state.chart = new uPlot(opts, [state.xs.slice(), ...state.ys.map((y) => y.slice())], $("plot"));
}

// ---- pictures ----

/// The open channel's picture channel: a mapped channel of it (`mapped_from` metadata, or `<channel>/<schema>`) in a
/// schema the page draws, or the open channel itself if it is one.
function pickView() {
  let pick = null;
  for (const ch of state.byTopic.values()) {
    if (!PICTURES.has(ch.schemaName) || ch.encoding !== "protobuf") continue;
    const from = ch.metadata?.mapped_from ?? ch.topic.slice(0, Math.max(0, ch.topic.lastIndexOf("/foxglove.")));
    if (ch.topic === state.open || (state.open !== null && from === state.open)) pick = ch;
  }
  const topic = pick ? pick.topic : null;
  if (topic === state.view.topic) return;
  Object.assign(state.view, { topic, latest: null, dirty: true, drawn: null, error: null });
  $("view-pane").hidden = topic === null;
  $("view-title").textContent = topic ?? "";
}

/// The protobuf type of channel `id`, from the FileDescriptorSet the server advertised with it (base64).
function typeOf(id) {
  let type = state.types.get(id);
  if (type) return type;
  const ch = state.channels.get(id);
  if (!ch) return null;
  const set = Uint8Array.from(atob(ch.schema), (c) => c.charCodeAt(0));
  type = protobuf.Root.fromDescriptor(set).lookupType(ch.schemaName);
  state.types.set(id, type);
  return type;
}

/// A field of a decoded message, by its proto name (`frame_id`) or protobufjs's camel-case one (`frameId`).
function field(m, name) {
  if (name in m) return m[name];
  const camel = name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  return m[camel];
}

function renderView() {
  const v = state.view;
  if (!v.dirty || !v.latest) return;
  v.dirty = false;
  const { channelId, bytes } = v.latest;
  const ch = state.channels.get(channelId);
  let msg;
  try {
    msg = typeOf(channelId).decode(bytes);
  } catch (e) {
    return viewError(`cannot decode ${ch?.schemaName}: ${e.message}`);
  }
  const canvas = $("view");
  switch (ch.schemaName) {
    case "foxglove.RawImage":
      return drawRawImage(canvas, msg);
    case "foxglove.CompressedImage":
      return drawCompressedImage(canvas, msg);
    case "foxglove.LaserScan":
      return drawPoints(canvas, "scan", scanPoints(msg), msg);
    case "foxglove.PointCloud":
      return drawPoints(canvas, "cloud", cloudPoints(msg), msg);
  }
}

function viewError(why) {
  state.view.error = why;
  $("view-info").textContent = why;
}

/// The RawImage encodings drawn: bytes per pixel, and how the pixel at byte `o` of `d` (column `x`, row `y` of
/// rows `step` bytes apart) becomes RGBA at `px[i..i+4]`.
const rgba = (px, i, r, g, b, a) => {
  px[i] = r;
  px[i + 1] = g;
  px[i + 2] = b;
  px[i + 3] = a;
};
const DECODERS = {
  rgb8: [3, (d, o, px, i) => rgba(px, i, d[o], d[o + 1], d[o + 2], 255)],
  rgba8: [4, (d, o, px, i) => rgba(px, i, d[o], d[o + 1], d[o + 2], d[o + 3])],
  bgr8: [3, (d, o, px, i) => rgba(px, i, d[o + 2], d[o + 1], d[o], 255)],
  bgra8: [4, (d, o, px, i) => rgba(px, i, d[o + 2], d[o + 1], d[o], d[o + 3])],
  mono8: [1, (d, o, px, i) => rgba(px, i, d[o], d[o], d[o], 255)],
  // 16-bit grey, little-endian: its high byte is shown.
  mono16: [2, (d, o, px, i) => rgba(px, i, d[o + 1], d[o + 1], d[o + 1], 255)],
};
/// YUV 4:2:2 (two pixels share their U and V) to RGB: BT.601, full range.
const yuv = (px, i, y, u, v) => rgba(px, i, y + 1.402 * (v - 128), y - 0.344136 * (u - 128) - 0.714136 * (v - 128),
  y + 1.772 * (u - 128), 255);
DECODERS.uyvy = [2, (d, o, px, i, x) => {
  const p = o - (x & 1) * 2; // the pair's first byte: U Y0 V Y1
  yuv(px, i, d[p + 1 + (x & 1) * 2], d[p], d[p + 2]);
}];
DECODERS.yuyv = [2, (d, o, px, i, x) => {
  const p = o - (x & 1) * 2; // Y0 U Y1 V
  yuv(px, i, d[p + (x & 1) * 2], d[p + 1], d[p + 3]);
}];
DECODERS.yuv422 = DECODERS.uyvy; // Foxglove's and ROS's alias
DECODERS.yuv422_yuy2 = DECODERS.yuyv;
/// Bayer mosaics, demosaiced per 2x2 cell (each cell's red, mean green and blue for its four pixels): half the
/// colour resolution, no interpolation across cells, which is enough to see what a raw camera looks at.
for (const pattern of ["rggb", "bggr", "gbrg", "grbg"]) {
  // Where in the cell (0 top left, 1 top right, 2 bottom left, 3 bottom right) each colour is.
  const [r, g0, g1, b] = [pattern.indexOf("r"), pattern.indexOf("g"), pattern.lastIndexOf("g"), pattern.indexOf("b")];
  DECODERS[`bayer_${pattern}8`] = [1, (d, o, px, i, x, y, step) => {
    const c = o - (x & 1) - (y & 1) * step; // the cell's top-left byte
    const at = (k) => d[c + (k & 1) + (k >> 1) * step];
    rgba(px, i, at(r), (at(g0) + at(g1)) / 2, at(b), 255);
  }];
}
DECODERS["8UC3"] = DECODERS.bgr8; // OpenCV's order
DECODERS["8UC1"] = DECODERS.mono8;
DECODERS["16UC1"] = DECODERS.mono16;

function drawRawImage(canvas, img) {
  const [w, h, enc, data] = [img.width, img.height, img.encoding, img.data];
  const dec = DECODERS[enc];
  if (!dec) return viewError(`${w}x${h} ${enc}: this page draws ${Object.keys(DECODERS).join(", ")}`);
  const [bpp, put] = dec;
  const step = img.step || w * bpp;
  const even = !/^(uyvy|yuyv|yuv422|bayer)/.test(enc) || (w % 2 === 0 && (!enc.startsWith("bayer") || h % 2 === 0));
  if (!(w > 0 && h > 0) || !even || step < w * bpp || data.length < step * (h - 1) + w * bpp) {
    return viewError(`${w}x${h} ${enc}, step ${step}: ${data.length} bytes do not make the image`);
  }
  const out = new ImageData(w, h);
  const px = out.data;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) put(data, y * step + x * bpp, px, (y * w + x) * 4, x, y, step);
  }
  if (canvas.width !== w || canvas.height !== h) [canvas.width, canvas.height] = [w, h];
  canvas.getContext("2d").putImageData(out, 0, 0);
  canvas.className = "image";
  shown("image", `${w}×${h} ${enc}, frame ${field(img, "frame_id") || "-"}`);
}

/// JPEG, PNG, WebP: the browser's own decoder. Frames may decode out of order: a newer one already drawn wins.
function drawCompressedImage(canvas, img) {
  const seq = (state.view.seq = (state.view.seq ?? 0) + 1);
  const format = String(img.format || "jpeg").replace(/^image\//, "");
  createImageBitmap(new Blob([img.data], { type: `image/${format}` })).then(
    (bitmap) => {
      if (seq !== state.view.seq) return;
      if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
        [canvas.width, canvas.height] = [bitmap.width, bitmap.height];
      }
      canvas.getContext("2d").drawImage(bitmap, 0, 0);
      canvas.className = "image";
      shown("image", `${bitmap.width}×${bitmap.height} ${format}, frame ${field(img, "frame_id") || "-"}`);
    },
    (e) => seq === state.view.seq && viewError(`${format}: the browser cannot decode it (${e.message ?? e})`),
  );
}

/// A laser scan's points in its own frame (x ahead, y left), beams of no valid range left out.
function scanPoints(scan) {
  const ranges = scan.ranges ?? [];
  const [a0, a1] = [field(scan, "start_angle"), field(scan, "end_angle")];
  const step = ranges.length > 1 ? (a1 - a0) / (ranges.length - 1) : 0;
  const pts = [];
  ranges.forEach((r, i) => {
    if (Number.isFinite(r) && r > 0) pts.push([r * Math.cos(a0 + i * step), r * Math.sin(a0 + i * step)]);
  });
  return pts;
}

/// A point cloud's x and y (its `x` and `y` fields, of any numeric type, little-endian as the schema says).
function cloudPoints(cloud) {
  const fields = cloud.fields ?? [];
  const readers = { 1: "getUint8", 2: "getInt8", 3: "getUint16", 4: "getInt16", 5: "getUint32", 6: "getInt32",
    7: "getFloat32", 8: "getFloat64" };
  const fx = fields.find((f) => f.name === "x");
  const fy = fields.find((f) => f.name === "y");
  const stride = field(cloud, "point_stride");
  const data = cloud.data;
  if (!fx || !fy || !(stride > 0) || !readers[fx.type] || !readers[fy.type]) return [];
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const pts = [];
  for (let o = 0; o + stride <= data.byteLength; o += stride) {
    const x = dv[readers[fx.type]](o + fx.offset, true);
    const y = dv[readers[fy.type]](o + fy.offset, true);
    if (Number.isFinite(x) && Number.isFinite(y)) pts.push([x, y]);
  }
  return pts;
}

/// A top-down plot: x up (ahead), y to the left, as a robot sees its floor; rings every metre (or the scale's
/// round step) around the sensor. Each point is a 3-pixel square centred on the pixel `pixelOf` gives.
function drawPoints(canvas, kind, pts, msg) {
  const size = 420;
  if (canvas.width !== size || canvas.height !== size) [canvas.width, canvas.height] = [size, size];
  canvas.className = "plot";
  const ctx = canvas.getContext("2d");
  let reach = 1e-3; // metres from the sensor to the farthest point, on either axis (a loop: clouds are big)
  for (const [x, y] of pts) reach = Math.max(reach, Math.abs(x), Math.abs(y));
  const half = size / 2;
  const scale = (half - 12) / reach; // pixels per metre
  const pixelOf = (x, y) => [Math.round(half - y * scale), Math.round(half - x * scale)];
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, size, size);
  ctx.strokeStyle = "#d8dde6";
  ctx.lineWidth = 1;
  const ring = 10 ** Math.floor(Math.log10(reach));
  for (let r = ring; r <= reach * 1.5; r += ring) {
    ctx.beginPath();
    ctx.arc(half, half, r * scale, 0, 2 * Math.PI);
    ctx.stroke();
  }
  ctx.beginPath();
  ctx.moveTo(half, 0);
  ctx.lineTo(half, size);
  ctx.moveTo(0, half);
  ctx.lineTo(size, half);
  ctx.stroke();
  ctx.fillStyle = `rgb(${POINT_COLOR.join(",")})`;
  const at = pts.map(([x, y]) => pixelOf(x, y));
  for (const [px, py] of at) ctx.fillRect(px - 1, py - 1, 3, 3);
  ctx.fillStyle = "#1d2430";
  ctx.fillText(`x ↑, y ←; rings every ${ring} m`, 6, 14);
  shown(kind, `${pts.length} points, frame ${field(msg, "frame_id") || "-"}`, { points: pts, pixels: at });
}

function shown(kind, info, extra = {}) {
  state.view.error = null;
  state.view.drawn = { topic: state.view.topic, kind, ...extra };
  $("view-info").textContent = info;
}

function redraw() {
  renderTree();
  renderView();
  if (state.chart && state.plotDirty && !state.paused) {
    state.plotDirty = false;
    state.chart.setData([state.xs.slice(), ...state.ys.map((y) => y.slice())]);
  }
  requestAnimationFrame(redraw);
}

// ---- wiring ----

document.querySelector("#channels tbody").addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr");
  if (tr) openChannel(tr.dataset.channel);
});
$("message").addEventListener("change", (ev) => {
  if (ev.target.matches("input[type=checkbox]")) togglePick(state.open, ev.target.dataset.path, ev.target.checked);
});
$("pause").addEventListener("click", () => {
  state.paused = !state.paused;
  $("pause").textContent = state.paused ? "resume" : "pause";
  state.plotDirty = true;
});
$("clear").addEventListener("click", () => {
  state.xs = [];
  state.ys = state.picked.map(() => []);
  state.plotDirty = true;
});
window.addEventListener("resize", () => state.chart && state.chart.setSize({ width: Math.max(300, $("plot-pane").clientWidth - 16), height: 280 }));

// For the browser test and for curious users: the page's state and its chart.
window.nerve = state;
connect();
requestAnimationFrame(redraw);
