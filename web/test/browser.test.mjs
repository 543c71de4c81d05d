// The page in a real browser (headless Chromium) against real servers, started by the Rust
// system test that runs this file:
//   QUEENS_URL, QUEENS_PID   the main server (--max-n 24)
//   QUEENS_BUSY_URL          a server with --max-searches 1
//   QUEENS_TOKEN_URL, QUEENS_TOKEN   a server with --auth-tokens, and one of its tokens
//   QUEENS_BIN               the queens binary (for servers this file starts: one it kills,
//                            one naming another origin with --cors-origin)
//   QUEENS_SCREENSHOT        where the n = 8 screenshot goes
// Bounds stated and checked: the search stops within 1 s of Stop (its process's CPU read
// from /proc); the page's JS heap stays under 32 MiB while n = 14 streams to its end and
// while n = 16 streams for 3 s.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { decodePng, idleAfter, launch, openPage, run, setQuestion, status, ticksIn } from "./browser.mjs";

const url = process.env.QUEENS_URL;
const pid = Number(process.env.QUEENS_PID);
/** The page's heap while n = 14 streams to its end stays under this. */
const HEAP_BOUND = 32 * 1024 * 1024;

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("the page loads, knows the server's largest n and counts n = 8", async () => {
  const page = await openPage(browser.context, url);
  assert.equal(await page.title(), "queens: N-Queens boards");
  assert.equal(await page.getAttribute("#n", "max"), "24");
  assert.equal(await page.textContent("#completions"), "92 solutions, 12 up to symmetry");
  assert.equal(await page.locator("#editor button").count(), 64);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("n = 8 shows its 92 boards, and 12 with one per symmetry class", async () => {
  const page = await openPage(browser.context, url);
  const all = await run(page, 8);
  assert.equal(all.state, "done", all.error);
  assert.equal(all.boards, 92);
  assert.equal(await page.locator("#boards canvas").count(), 92);
  assert.equal(await page.textContent("#page"), "boards 1\u201392 of 92");
  assert.equal(await page.textContent("#of"), "of 92");
  assert.equal(await page.getAttribute("#progress", "value"), "1");
  const first = await page.evaluate(() => [...document.querySelector("#boards canvas").columns]);
  assert.deepEqual(first, [0, 4, 7, 5, 2, 6, 1, 3]);
  const classes = await run(page, 8, { fundamental: true });
  assert.equal(classes.boards, 12);
  assert.equal(await page.locator("#boards canvas").count(), 12);
  assert.equal(await page.textContent("#of"), "of 12");
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("fixing the queen (0, 0) leaves 4 solutions at n = 8, and the stream shows those 4", async () => {
  const page = await openPage(browser.context, url);
  await page.click('#editor button[data-row="0"][data-column="0"]');
  await page.waitForFunction(() => document.getElementById("completions").textContent.endsWith("left"));
  assert.equal(await page.textContent("#completions"), "4 solutions left");
  assert.equal(await page.getAttribute('#editor button[data-row="0"][data-column="0"]', "aria-pressed"), "true");
  // The squares the fixed queen attacks are marked: its row, column and diagonal.
  assert.equal(await page.locator("#editor button.attacked").count(), 7 + 7 + 7);
  const fixed = await run(page, 8);
  assert.equal(fixed.boards, 4);
  const boards = await page.evaluate(() => [...document.querySelectorAll("#boards canvas")].map((c) => [...c.columns]));
  assert.ok(boards.every((b) => b[0] === 0), JSON.stringify(boards));
  // A second queen that the first attacks: no solution left.
  await page.click('#editor button[data-row="1"][data-column="1"]');
  await page.waitForFunction(() => document.getElementById("completions").textContent === "no solution left");
  await page.click("#clear");
  await page.waitForFunction(() => document.getElementById("completions").textContent.startsWith("92 solutions"));
  await page.close();
});

test("hovering a board shows the lines its queen attacks", async () => {
  const page = await openPage(browser.context, url);
  await run(page, 6);
  const canvas = page.locator("#boards canvas").first();
  // Pixels of the attacked colours (light and dark squares) on the canvas.
  const attacked = () =>
    canvas.evaluate((c) => {
      const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let hits = 0;
      for (let i = 0; i < data.length; i += 4) {
        const rgb = [data[i], data[i + 1], data[i + 2]].join();
        if (rgb === "246,193,166" || rgb === "217,131,93") hits++;
      }
      return hits;
    });
  assert.equal(await attacked(), 0);
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + 3);
  assert.ok((await attacked()) > 0, "no attacked squares drawn on hover");
  await page.mouse.move(0, 0);
  assert.equal(await attacked(), 0);
  await page.close();
});

test("an invalid request shows INVALID_ARGUMENT with the field at fault", async () => {
  const page = await openPage(browser.context, url);
  const big = await run(page, 25);
  assert.equal(big.state, "error");
  assert.equal(big.error, "INVALID_ARGUMENT: n: 25 is not a supported board size; n must be between 1 and 24");
  await setQuestion(page, 8);
  await page.waitForFunction(() => document.querySelectorAll("#editor button").length === 64);
  await page.click('#editor button[data-row="2"][data-column="3"]');
  const both = await run(page, 8, { fundamental: true });
  assert.equal(both.state, "error");
  assert.match(both.error, /^INVALID_ARGUMENT: fundamental: cannot be combined with fixed queens/);
  await page.close();
});

test("a deadline the search cannot meet shows DEADLINE_EXCEEDED", async () => {
  const page = await openPage(browser.context, url);
  const late = await run(page, 19, { deadline: "0.3" });
  assert.equal(late.state, "error");
  assert.match(late.error, /^DEADLINE_EXCEEDED: /);
  await page.close();
});

test("Stop ends the server's search within 1 s", async () => {
  const page = await openPage(browser.context, url);
  // A deadline of an earlier run, long over, must not turn this Stop into a deadline.
  const quick = await run(page, 8, { deadline: "0.5" });
  assert.equal(quick.boards, 92, quick.error);
  await page.waitForTimeout(2700);
  await setQuestion(page, 20);
  await page.click("#start");
  await page.waitForFunction(() => Number(document.getElementById("status").dataset.boards ?? 0) > 100000, null, {
    timeout: 60000,
  });
  const busy = await ticksIn(pid, 500);
  const clicked = Date.now();
  await page.click("#stop");
  const idle = await idleAfter(pid, clicked);
  await page.waitForFunction(() => document.getElementById("status").dataset.state === "stopped");
  console.log(`# measure stop: ${busy} ticks in 500 ms while streaming n = 20; server idle ${idle} ms after Stop`);
  assert.ok(busy >= 5, `the search was not running: ${busy} ticks in 500 ms`);
  assert.ok(idle !== undefined && idle <= 1000, `server idle ${idle} ms after Stop`);
  // The slot is free again: the next question is answered.
  const again = await run(page, 8);
  assert.equal(again.boards, 92, again.error);
  await page.close();
});

test("a refused call shows RESOURCE_EXHAUSTED with the server's reason", async () => {
  // One search slot, held by a stream nobody reads.
  const holder = new AbortController();
  const held = await fetch(`${process.env.QUEENS_BUSY_URL}/queens.v1.Queens/Enumerate`, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+proto" },
    body: Buffer.from([0, 0, 0, 0, 4, 0x08, 20, 0x48, 1]),
    signal: holder.signal,
  });
  assert.equal(held.status, 200);
  try {
    const page = await openPage(browser.context, process.env.QUEENS_BUSY_URL);
    // A small board's count takes no search slot: it is answered beside the held stream.
    assert.match(await page.textContent("#completions"), /^92 solutions/);
    // n = 13 is a long search: it needs the slot the stream holds.
    await setQuestion(page, 13);
    await page.waitForFunction(() =>
      document.getElementById("completions").textContent.startsWith("RESOURCE_EXHAUSTED: "),
    );
    const refused = await run(page, 13);
    assert.equal(refused.state, "error");
    assert.match(refused.error, /^RESOURCE_EXHAUSTED: .*--max-searches/);
    await page.close();
  } finally {
    holder.abort();
  }
});

test("a server with tokens: UNAUTHENTICATED until the page sends one", async () => {
  const page = await openPage(browser.context, process.env.QUEENS_TOKEN_URL);
  assert.match(await page.textContent("#completions"), /^UNAUTHENTICATED: /);
  assert.ok(await page.locator("#token-label.needed").count());
  const refused = await run(page, 8);
  assert.equal(refused.state, "error");
  assert.match(refused.error, /^UNAUTHENTICATED: this server requires a bearer token/);
  await page.fill("#token", "not-a-token-this-server-knows");
  const wrong = await run(page, 8);
  assert.match(wrong.error, /^UNAUTHENTICATED: the bearer token is not one this server knows/);
  await page.fill("#token", process.env.QUEENS_TOKEN);
  const answered = await run(page, 8);
  assert.equal(answered.boards, 92, answered.error);
  await page.close();
});

test("a server gone shows UNAVAILABLE", async () => {
  const { addr, child: server } = await startServer();
  try {
    const page = await openPage(browser.context, `http://${addr}/`);
    server.kill("SIGKILL");
    await new Promise((resolve) => server.once("exit", resolve));
    const gone = await run(page, 8);
    assert.equal(gone.state, "error");
    assert.match(gone.error, /^UNAVAILABLE: the server cannot be reached/);
    await page.close();
  } finally {
    server.kill("SIGKILL");
  }
});

test(`n = 14 streams to its end with the page's heap under ${HEAP_BOUND / 1048576} MiB`, async () => {
  const page = await openPage(browser.context, url);
  const result = await run(page, 14, { timeoutMs: 300000 });
  assert.equal(result.state, "done", result.error);
  assert.equal(result.boards, 365596);
  assert.equal(result.dropped, 365596 - 1000);
  assert.equal(await page.locator("#boards canvas").count(), 96, "the last page: boards 365,501-365,596");
  console.log(
    `# measure n = 14: ${result.boards} boards in ${result.seconds.toFixed(2)} s ` +
      `(${Math.round(result.boards / result.seconds)} boards/s), peak JS heap ${(result.peakHeap / 1048576).toFixed(1)} MiB`,
  );
  assert.ok(result.peakHeap < HEAP_BOUND, `peak heap ${result.peakHeap} bytes`);
  await page.close();
});

test(`n = 16 streams (3 s of it, then Stop) with the page's heap under ${HEAP_BOUND / 1048576} MiB`, async () => {
  const page = await openPage(browser.context, url);
  await setQuestion(page, 16);
  const cdp = await page.context().newCDPSession(page);
  await page.click("#start");
  let peak = 0;
  const until = Date.now() + 3000;
  while (Date.now() < until) {
    peak = Math.max(peak, (await cdp.send("Runtime.getHeapUsage")).usedSize);
    await page.waitForTimeout(50);
  }
  const streamed = await status(page);
  await page.click("#stop");
  await page.waitForFunction(() => ["stopped", "done"].includes(document.getElementById("status").dataset.state));
  console.log(`# measure n = 16: ${streamed.boards} boards in 3 s of streaming, peak JS heap ${(peak / 1048576).toFixed(1)} MiB`);
  assert.ok(streamed.boards > 100000, `only ${streamed.boards} boards in 3 s`);
  assert.equal(streamed.dropped, streamed.boards - 1000);
  assert.ok(peak < HEAP_BOUND, `peak heap ${peak} bytes`);
  await page.close();
});

test("saving as it streams: to a chosen file, or to a download where there is no file picker", async () => {
  // The picker, answered with a file of the origin's private file system (a picker's dialog
  // cannot be clicked headless); the page writes to it through the same interface.
  const picked = await browser.context.newPage();
  await picked.addInitScript(() => {
    window.showSaveFilePicker = async () => {
      const root = await navigator.storage.getDirectory();
      return root.getFileHandle("picked.bin", { create: true });
    };
  });
  await picked.goto(url);
  await picked.selectOption("#save", "packed");
  const saved = await run(picked, 10);
  assert.equal(saved.boards, 724);
  await picked.waitForSelector("#saved:not([hidden])");
  assert.match(await picked.textContent("#saved"), /^Saved 7,240 bytes to picked\.bin/);
  const file = await picked.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    const bytes = new Uint8Array(await (await (await root.getFileHandle("picked.bin")).getFile()).arrayBuffer());
    return { length: bytes.length, first: [...bytes.subarray(0, 10)], last: [...bytes.subarray(bytes.length - 10)] };
  });
  assert.deepEqual(file, {
    length: 7240,
    first: [0, 2, 5, 7, 9, 4, 8, 1, 3, 6],
    last: [9, 7, 4, 2, 0, 5, 1, 8, 6, 3],
  });
  await picked.close();

  const plain = await browser.context.newPage();
  await plain.addInitScript(() => {
    delete window.showSaveFilePicker;
    delete Window.prototype.showSaveFilePicker;
  });
  await plain.goto(url);
  await plain.selectOption("#save", "text");
  await run(plain, 8);
  await plain.waitForSelector("#download");
  const [download] = await Promise.all([plain.waitForEvent("download"), plain.click("#download")]);
  const text = await new Promise(async (resolve) => {
    const chunks = [];
    const stream = await download.createReadStream();
    stream.on("data", (c) => chunks.push(c));
    stream.on("end", () => resolve(Buffer.concat(chunks).toString()));
  });
  const lines = text.trimEnd().split("\n");
  assert.equal(download.suggestedFilename(), "queens-8.txt");
  assert.equal(lines.length, 92);
  assert.equal(lines[0], "0,4,7,5,2,6,1,3");
  await plain.close();
});

/** Starts `queens serve --addr 127.0.0.1:0 ...args` from QUEENS_BIN: { addr, child }. */
async function startServer(args = []) {
  const child = spawn(process.env.QUEENS_BIN, ["serve", "--addr", "127.0.0.1:0", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const first = await new Promise((resolve) => createInterface({ input: child.stderr }).once("line", resolve));
  return { addr: first.match(/listening on (\S+)/)[1], child };
}

test("a page of another origin may call only a server that names it (CORS)", async () => {
  // A plain page on a loopback origin of its own (the server's own page may call its own
  // origin only, by its Content-Security-Policy), and a server that names that origin.
  const site = createServer((request, response) => {
    response.setHeader("content-type", "text/html");
    response.end("<!doctype html><title>another origin</title>");
  });
  await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${site.address().port}`;
  const named = await startServer(["--cors-origin", origin]);
  try {
    const page = await browser.context.newPage();
    await page.goto(`${origin}/`);
    const call = (base) =>
      page.evaluate(async (base) => {
        try {
          const response = await fetch(`${base}/queens.v1.Queens/Count`, {
            method: "POST",
            headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
            body: new Uint8Array([0, 0, 0, 0, 2, 8, 8]),
          });
          const body = new Uint8Array(await response.arrayBuffer());
          return { body: [...body.subarray(0, 9)] };
        } catch (error) {
          return { failed: error.name };
        }
      }, base);
    const allowed = await call(`http://${named.addr}`);
    assert.deepEqual(allowed.body, [0, 0, 0, 0, 4, 8, 92, 16, 12], JSON.stringify(allowed));
    const refused = await call(process.env.QUEENS_BUSY_URL);
    assert.deepEqual(refused, { failed: "TypeError" });
    await page.close();
  } finally {
    named.child.kill("SIGKILL");
    site.close();
  }
});

test("a screenshot of n = 8 is not blank", async () => {
  const page = await openPage(browser.context, url);
  await run(page, 8);
  const canvas = page.locator("#boards canvas").nth(3);
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const png = await page.screenshot({ fullPage: false });
  if (process.env.QUEENS_SCREENSHOT) writeFileSync(process.env.QUEENS_SCREENSHOT, png);
  const { width, height, channels, pixels } = decodePng(png);
  const colours = new Set();
  let background = 0;
  for (let i = 0; i < pixels.length; i += channels) {
    const rgb = (pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2];
    colours.add(rgb);
    if (rgb === 0xfafaf7) background++;
  }
  console.log(`# measure screenshot: ${width}x${height}, ${colours.size} colours, ${((100 * background) / (width * height)).toFixed(0)} % background`);
  assert.ok(colours.size >= 50, `${colours.size} distinct colours`);
  assert.ok(background < 0.8 * width * height, "mostly background");
  await page.close();
});
