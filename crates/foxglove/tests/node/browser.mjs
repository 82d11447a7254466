// The page `nerve foxglove` serves, in headless Chromium driven by puppeteer-core. Usage:
//   node browser.mjs http://HOST:PORT/ SPEC.json SCREENSHOT.png
// SPEC: {"channel": C, "type": T, "minRate": HZ, "maxRate": HZ, "fields": {PATH: [values published]},
//        "otherRows": [channels], "minPoints": N, "timeoutMs": N}
// Opens the page, waits for the channel table to list C with type T at a rate in [minRate, maxRate] (and the
// other channels), opens C, ticks each field in its tree, waits for minPoints points of each field, then checks that every
// plotted point is one of the values published for its field and that times increase. Saves a screenshot and
// prints one JSON line of results; exits 0 on success, 1 otherwise.
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
await finish();
