// Driving the page in headless Chromium (Debian's `chromium`, through playwright-core with
// its executablePath; no browser is downloaded), for the browser tests and the measurement:
// launching with a fresh profile, opening the page, running a question to its end while
// sampling the page's JS heap over the DevTools protocol, a process's CPU time from /proc,
// and a PNG decoder to look at screenshots.
//
// QUEENS_WEB_MODULES: the node_modules with playwright-core; QUEENS_SCRATCH: a folder for
// the browser's profile; CHROMIUM: the browser (default /usr/bin/chromium).

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { inflateSync } from "node:zlib";

const require = createRequire(join(resolve(process.env.QUEENS_WEB_MODULES ?? "node_modules"), "x.js"));
const { chromium } = require("playwright-core");

/** Flags for a quiet headless Chromium on a machine without a network. */
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A browser with a fresh profile: { context, close() }. */
export async function launch() {
  const scratch = process.env.QUEENS_SCRATCH ?? process.cwd();
  const profile = mkdtempSync(join(scratch, "chromium-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    acceptDownloads: true,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens the page at `url` and waits for its first Count (the editor's) to end. The page's
 * uncaught errors are collected in `page.errors`. */
export async function openPage(context, url) {
  const page = await context.newPage();
  page.errors = [];
  page.on("pageerror", (error) => page.errors.push(error.message));
  await page.goto(url);
  await page.waitForFunction(() => {
    const text = document.getElementById("completions").textContent;
    return text !== "" && !text.startsWith("counting");
  });
  return page;
}

/** The run's state as the page shows it. */
export function status(page) {
  return page.evaluate(() => {
    const s = document.getElementById("status").dataset;
    return {
      state: s.state,
      boards: Number(s.boards ?? 0),
      seconds: Number(s.seconds ?? 0),
      error: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent,
      dropped: Number(document.getElementById("dropped").dataset.dropped ?? 0),
    };
  });
}

const ENDED = ["done", "stopped", "error"];

/** Sets n (and the other fields given), clicks Start and waits for the run to end, sampling
 * the JS heap every 50 ms: resolves to the page's status and `peakHeap` (bytes). */
export async function run(page, n, { fundamental = false, deadline = "", timeoutMs = 120000 } = {}) {
  await setQuestion(page, n, { fundamental, deadline });
  const cdp = await page.context().newCDPSession(page);
  let peakHeap = 0;
  await page.click("#start");
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { usedSize } = await cdp.send("Runtime.getHeapUsage");
    peakHeap = Math.max(peakHeap, usedSize);
    const now = await status(page);
    if (ENDED.includes(now.state) && (await page.isDisabled("#stop"))) {
      await cdp.detach();
      return { ...now, peakHeap };
    }
    if (Date.now() > until) throw new Error(`n = ${n} still ${now.state} after ${timeoutMs} ms`);
    await page.waitForTimeout(50);
  }
}

/** Fills the question's fields. */
export async function setQuestion(page, n, { fundamental = false, deadline = "" } = {}) {
  await page.fill("#n", String(n));
  await page.setChecked("#fundamental", fundamental);
  await page.fill("#deadline", String(deadline));
}

/** CPU time of process `pid` so far, in clock ticks (utime + stime of /proc/PID/stat). */
export function cpuTicks(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** Ticks `pid` spends in the next `ms`. */
export async function ticksIn(pid, ms) {
  const before = cpuTicks(pid);
  await new Promise((resolve) => setTimeout(resolve, ms));
  return cpuTicks(pid) - before;
}

/** How long after `since` (a Date.now()) `pid` first spends a 200 ms window idle (at most 2
 * ticks, a tenth of a core); undefined if it stays busy until `limitMs`. */
export async function idleAfter(pid, since, limitMs = 5000) {
  while (Date.now() - since < limitMs) {
    const start = Date.now() - since;
    if ((await ticksIn(pid, 200)) <= 2) return start;
  }
  return undefined;
}

/** Decodes an 8-bit RGB or RGBA PNG (no interlace, as Chromium writes screenshots):
 * { width, height, channels, pixels }. */
export function decodePng(png) {
  let i = 8;
  let width;
  let height;
  let channels;
  const idat = [];
  while (i < png.length) {
    const len = png.readUInt32BE(i);
    const type = png.toString("latin1", i + 4, i + 8);
    const data = png.subarray(i + 8, i + 8 + len);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error("not an 8-bit, non-interlaced PNG");
      channels = { 2: 3, 6: 4 }[data[9]];
      if (!channels) throw new Error(`PNG colour type ${data[9]}`);
    } else if (type === "IDAT") {
      idat.push(data);
    }
    i += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      let p;
      switch (filter) {
        case 0: p = 0; break;
        case 1: p = a; break;
        case 2: p = b; break;
        case 3: p = (a + b) >> 1; break;
        case 4: {
          const pa = Math.abs(b - c);
          const pb = Math.abs(a - c);
          const pc = Math.abs(a + b - 2 * c);
          p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: throw new Error(`PNG filter ${filter}`);
      }
      pixels[y * stride + x] = (line[x] + p) & 0xff;
    }
  }
  return { width, height, channels, pixels };
}
