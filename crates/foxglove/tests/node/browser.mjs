// The page `nerve foxglove` serves, in headless Chromium driven by puppeteer-core. Usage:
//   node browser.mjs http://HOST:PORT/ SPEC.json SCREENSHOT.png
// SPEC: {"channel": C, "type": T, "minRate": HZ, "maxRate": HZ, "fields": {PATH: [values published]},
//        "otherRows": [channels], "minPoints": N, "timeoutMs": N,
//        "images": [{"channel": C, "topic": MAPPED, "width": W, "height": H, "rgba": [bytes]}], (optional)
//        "scan": {"channel": C, "topic": MAPPED, "points": [[x, y], ...]},                     (optional)
//        "jpeg": {"channel": C, "topic": MAPPED, "width": W, "height": H, "tolerance": N,
//                 "pixels": [[x, y, [r, g, b]], ...]}}                                           (optional)
// Opens the page, waits for the channel table to list C with type T at a rate in [minRate, maxRate] (and the
// other channels), opens C, ticks each field in its tree, waits for minPoints points of each field, then checks that every
// plotted point is one of the values published for its field and that times increase. For each of "images", opens
// that channel and checks that its picture (the server's mapped channel MAPPED) is drawn with exactly the pixels
// given (the canvas read back with getImageData), saving a screenshot of the first beside SCREENSHOT (`-image.png`);
// with "scan",
// opens that channel and checks that the top-down plot has each point given (to 1e-4 m) and the point colour at
// each point's pixel; with "jpeg", that the compressed image is drawn W x H with the pixels given (each channel
// within the tolerance: JPEG is lossy). Saves a screenshot and prints one JSON line of results; exits 0 on success, 1 otherwise.
import { readFileSync } from "node:fs";
import puppeteer from "puppeteer-core";

const [url, specPath, screenshot] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));
const problems = [];
const result = { ok: false, problems };

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const timer = setTimeout(async () => {
  problems.push("timed out");
  await finish();
}, spec.timeoutMs ?? 30000);

async function finish() {
  clearTimeout(timer);
  try {
    await page.screenshot({ path: screenshot, fullPage: true });
  } catch (e) {
    problems.push(`screenshot: ${e}`);
  }
  await browser.close();
  result.ok = problems.length === 0;
  console.log(JSON.stringify(result));
  process.exit(result.ok ? 0 : 1);
}

const page = await browser.newPage();
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
await page.setViewport({ width: 1400, height: 900 });
await page.goto(url, { waitUntil: "load" });

// The table: the channel, its type and a rate in range; the other channels listed too.
await page.waitForFunction(
  (s) => {
    const rows = [...document.querySelectorAll("#channels tbody tr")].map((tr) => tr.dataset.channel);
    const tr = document.querySelector(`#channels tbody tr[data-channel="${s.channel}"]`);
    const rate = tr ? parseFloat(tr.children[3].textContent) : 0;
    return tr && rate >= s.minRate && rate <= s.maxRate && s.otherRows.every((c) => rows.includes(c));
  },
  { polling: 100, timeout: spec.timeoutMs },
  spec,
);
result.rows = await page.$$eval("#channels tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
const row = result.rows.find((r) => r[0] === spec.channel);
if (row[1] !== spec.type) problems.push(`type cell: ${row[1]}`);
if (!(Number(row[2]) > 0)) problems.push(`count cell: ${row[2]}`);
// The server's figures on clients: this page is one (nerve foxglove adds them to /nerve/spy).
result.clients = await page.$eval("#clients", (el) => el.textContent);
if (!/^\d+ clients? connected; \d+ messages dropped for slow clients/.test(result.clients)) {
  problems.push(`clients line: ${result.clients}`);
}

// Open the channel; tick each field to plot.
await page.click(`#channels tbody tr[data-channel="${spec.channel}"]`);
for (const path of Object.keys(spec.fields)) {
  const box = `#message input[data-path="${path}"]`;
  await page.waitForSelector(box, { timeout: spec.timeoutMs });
  await page.click(box);
}
await page.waitForFunction(
  (n) => window.nerve.ys.length > 0 && window.nerve.ys.every((y) => y.filter((v) => v !== null).length >= n),
  { polling: 100, timeout: spec.timeoutMs },
  spec.minPoints,
);
await new Promise((r) => setTimeout(r, 300)); // a frame or two, so the chart on screen has the points

const plot = await page.evaluate(() => ({
  labels: window.nerve.chart.series.slice(1).map((s) => s.label),
  data: window.nerve.chart.data.map((col) => Array.from(col)),
}));
result.points = plot.data[0].length;
result.labels = plot.labels;
const xs = plot.data[0];
for (let i = 1; i < xs.length; i++) if (!(xs[i] >= xs[i - 1])) problems.push(`time goes back at point ${i}`);
Object.entries(spec.fields).forEach(([path, values], i) => {
  const label = `${spec.channel} ${path}`;
  if (plot.labels[i] !== label) problems.push(`series ${i} is ${plot.labels[i]}, not ${label}`);
  const ys = plot.data[i + 1].filter((y) => y !== null);
  if (ys.length < spec.minPoints) problems.push(`${path}: ${ys.length} points`);
  const bad = ys.filter((y) => !values.includes(y));
  if (bad.length) problems.push(`${path}: values never published: ${bad.slice(0, 5)}`);
});
result.tree = await page.$eval("#message", (el) => el.innerText.split("\n").slice(0, 8));

/// Opens `want.channel` and waits until its picture (`want.topic`) is drawn as `kind` (and, to be screenshot,
/// `settle`s a frame or two); what was drawn.
async function openPicture(want, kind, settle = false) {
  await page.click(`#channels tbody tr[data-channel="${want.channel}"]`);
  await page.waitForFunction(
    (topic, kind) => window.nerve.view.drawn?.topic === topic && window.nerve.view.drawn.kind === kind,
    { polling: 100, timeout: spec.timeoutMs },
    want.topic,
    kind,
  );
  if (settle) await new Promise((r) => setTimeout(r, 200));
  return page.evaluate(() => ({ drawn: window.nerve.view.drawn, info: document.getElementById("view-info").textContent }));
}

const picturesFrom = Date.now(); // what the pictures' checks cost, reported as result.picturesMs
result.images = [];
for (const [n, image] of (spec.images ?? []).entries()) {
  const { info } = await openPicture(image, "image", n === 0);
  const got = await page.evaluate(() => {
    const c = document.getElementById("view");
    return { width: c.width, height: c.height, rgba: Array.from(c.getContext("2d").getImageData(0, 0, c.width, c.height).data) };
  });
  const { width, height, rgba } = image;
  if (got.width !== width || got.height !== height) {
    problems.push(`${image.channel}: ${got.width}x${got.height}, not ${width}x${height}`);
  }
  const wrong = [];
  for (let i = 0; i < rgba.length && wrong.length < 5; i += 4) {
    const [a, b] = [rgba.slice(i, i + 4), got.rgba.slice(i, i + 4)];
    if (a.some((v, k) => v !== b[k])) wrong.push(`pixel ${i / 4}: ${b} not ${a}`);
  }
  if (got.rgba.length !== rgba.length) wrong.push(`${got.rgba.length / 4} pixels, not ${rgba.length / 4}`);
  if (wrong.length) problems.push(`${image.channel}: ${wrong.join("; ")}`);
  result.images.push({ channel: image.channel, pixels: got.rgba.length / 4, info });
  if (n === 0) await page.screenshot({ path: screenshot.replace(/(\.png)?$/, "-image.png"), fullPage: true });
}

if (spec.jpeg) {
  const { info } = await openPicture(spec.jpeg, "image");
  const got = await page.evaluate((pixels) => {
    const c = document.getElementById("view");
    const ctx = c.getContext("2d");
    return { width: c.width, height: c.height, pixels: pixels.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data)) };
  }, spec.jpeg.pixels);
  const { width, height, tolerance } = spec.jpeg;
  if (got.width !== width || got.height !== height) problems.push(`jpeg is ${got.width}x${got.height}, not ${width}x${height}`);
  spec.jpeg.pixels.forEach(([x, y, rgb], i) => {
    if (rgb.some((v, k) => Math.abs(v - got.pixels[i][k]) > tolerance)) problems.push(`jpeg pixel ${x},${y}: ${got.pixels[i]} not ${rgb}`);
  });
  result.jpeg = { checked: spec.jpeg.pixels.length, info };
}

// Last, so that the final screenshot shows the scan.
if (spec.scan) {
  const { drawn, info } = await openPicture(spec.scan, "scan", true);
  const colour = await page.evaluate((pixels) => {
    const ctx = document.getElementById("view").getContext("2d");
    return pixels.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data));
  }, drawn.pixels);
  const want = spec.scan.points;
  if (drawn.points.length !== want.length) problems.push(`scan: ${drawn.points.length} points, not ${want.length}`);
  want.forEach(([x, y], i) => {
    const p = drawn.points[i];
    if (!p || Math.abs(p[0] - x) > 1e-4 || Math.abs(p[1] - y) > 1e-4) problems.push(`scan point ${i}: ${p} not ${[x, y]}`);
    const c = colour[i];
    if (c && (c[0] !== 217 || c[1] !== 72 || c[2] !== 15)) problems.push(`scan point ${i}: pixel ${drawn.pixels[i]} is ${c}`);
  });
  result.scan = { points: drawn.points.length, info };
}
// No built-in mapping makes a PointCloud, so the page's reader of one is checked on its own: x and y of each
// point, FLOAT32 and FLOAT64 fields at their offsets, little-endian, the stride's other bytes skipped.
if (spec.scan) {
  result.cloud = await page.evaluate(() => {
    const buf = new ArrayBuffer(2 * 24);
    const dv = new DataView(buf);
    [[1.5, -2.25], [-0.5, 3.0]].forEach(([x, y], k) => {
      dv.setFloat32(k * 24 + 4, x, true);
      dv.setFloat64(k * 24 + 12, y, true);
      dv.setFloat32(k * 24 + 8, 99, true); // z, not read
    });
    const fields = [{ name: "x", offset: 4, type: 7 }, { name: "z", offset: 8, type: 7 }, { name: "y", offset: 12, type: 8 }];
    return cloudPoints({ fields, point_stride: 24, data: new Uint8Array(buf) });
  });
  if (JSON.stringify(result.cloud) !== "[[1.5,-2.25],[-0.5,3]]") problems.push(`cloud points: ${JSON.stringify(result.cloud)}`);
}
result.picturesMs = Date.now() - picturesFrom;
await finish();
