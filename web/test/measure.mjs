// Measures the page in headless Chromium against a running server (the figures of
// docs/performance.md): boards/s into the page for n = 12 and 14 (RUNS runs each), n = 16
// streamed to its end, the page's peak JS heap, and the time from a click on Stop to the
// server's CPU going idle. Run it beside the packed Node client's bench in the same session:
//
//   QUEENS_URL=http://127.0.0.1:PORT QUEENS_PID=PID QUEENS_WEB_MODULES=... node test/measure.mjs
//
// Boards/s is the page's own figure: boards over the time from sending Enumerate to its end
// (the Count for the progress bar comes before and is not counted).

import { idleAfter, launch, openPage, run, setQuestion } from "./browser.mjs";

const url = process.env.QUEENS_URL;
const pid = Number(process.env.QUEENS_PID);
const runs = Number(process.env.RUNS ?? 3);
const mib = (bytes) => (bytes / 1048576).toFixed(1);

const browser = await launch();
try {
  const page = await openPage(browser.context, url);
  for (const n of [12, 14, 16]) {
    for (let i = 1; i <= (n === 16 ? 1 : runs); i++) {
      const r = await run(page, n, { timeoutMs: 600000 });
      if (r.state !== "done") throw new Error(`n = ${n}: ${r.state} ${r.error}`);
      console.log(
        `page n = ${n} run ${i}: ${r.boards} boards in ${r.seconds.toFixed(3)} s, ` +
          `${(r.boards / r.seconds / 1e6).toFixed(2)} M boards/s, peak JS heap ${mib(r.peakHeap)} MiB`,
      );
    }
  }
  for (let i = 1; i <= 5; i++) {
    await setQuestion(page, 20);
    await page.click("#start");
    await page.waitForFunction(() => Number(document.getElementById("status").dataset.boards ?? 0) > 1e6, null, {
      timeout: 60000,
    });
    const clicked = Date.now();
    await page.click("#stop");
    const idle = await idleAfter(pid, clicked);
    await page.waitForFunction(() => document.getElementById("status").dataset.state === "stopped");
    console.log(`stop run ${i}: server idle ${idle} ms after the click (first 200 ms window with at most 2 ticks)`);
    await page.waitForTimeout(500);
  }
} finally {
  await browser.close();
}
