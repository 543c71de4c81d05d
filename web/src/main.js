// The page: a question (n, one per symmetry class, fixed queens, a deadline, a token), a
// Count for each click on the board of fixed queens, and Start: a Count for the progress
// bar's total, then the Enumerate stream of packed records, drawn a page at a time from a
// bounded window, optionally saved to a file as it comes. Stop cancels the call, which
// cancels the server's search.

import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { Queens } from "queens-pb";
import { BoardWindow, attacks, cellSize, drawBoard } from "./boards.js";
import { busy, cancelled, describe, pastDeadline } from "./errors.js";
import { openSave } from "./save.js";

/** Boards the page keeps (the newest); older ones are dropped from view. */
const KEEP = 1000;
/** Boards drawn on one page. */
const PAGE = 100;
/** Bytes of boards a message carries (batch_size = this / n). */
const BATCH_BYTES = 1 << 20;
/** A click's Count gives up after this long (a big board can take hours to count). */
const EDITOR_DEADLINE_MS = 5000;
/** The progress bar's Count gives up after this long; the stream then runs without a total. */
const TOTAL_DEADLINE_MS = 3000;
/** The status and the page of boards are redrawn at most this often while streaming. */
const RENDER_EVERY_MS = 250;
/** A refusal for want of a search slot this soon after the page cancelled its own call is
 * the server not having let go of that call yet: asked again, every 100 ms. */
const OWN_CANCEL_GRACE_MS = 2000;
/** The largest board the editor draws (the server's own maximum, from its settings). */
let maxN = 32;

const $ = (id) => document.getElementById(id);
const client = createClient(
  Queens,
  createGrpcWebTransport({ baseUrl: location.origin, useBinaryFormat: true }),
);

// One search at a time: the server gives each client a share of its search slots (by
// default one), so a new question cancels the one before and waits for it to end.
let running = Promise.resolve();
let controller = null;
let ownCancelAt = -Infinity;

/** Cancels the call in flight and returns a turn: `ready` resolves when the calls before
 * have ended; `release()` ends the turn. */
function turn() {
  if (controller) {
    controller.abort();
    ownCancelAt = performance.now();
  }
  const mine = new AbortController();
  controller = mine;
  const before = running;
  let release;
  running = new Promise((resolve) => (release = resolve));
  return {
    signal: mine.signal,
    ready: before,
    release() {
      if (controller === mine) controller = null;
      release();
    },
  };
}

/** Runs `attempt`, asking again while the server still holds the page's own cancelled call. */
async function retryingOwnCancel(signal, attempt) {
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const recent = performance.now() - ownCancelAt < OWN_CANCEL_GRACE_MS;
      if (!busy(error) || !recent || signal.aborted) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** How much longer than its deadline the page waits for a call's own answer before it gives
 * up on the server (and says so as a deadline of its own). */
const DEADLINE_GRACE_MS = 2000;

/** A call the page gave up on, DEADLINE_GRACE_MS past its deadline: the server never said. */
class PageDeadline extends Error {}

/**
 * The options of one call: cancellation, the token, and a deadline in ms (if any). The
 * deadline goes to the server as `grpc-timeout`, so that the server ends the call with its
 * own DEADLINE_EXCEEDED; the page stops waiting only DEADLINE_GRACE_MS after it. `expired()`
 * says whether the page gave up; `end()` is called when the call is over.
 */
function callOptions(signal, timeoutMs) {
  const token = typedToken();
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  if (timeoutMs === undefined) return { options: { signal, headers }, expired: () => false, end() {} };
  const ms = Math.max(1, Math.ceil(timeoutMs));
  headers["grpc-timeout"] = ms < 1e8 ? `${ms}m` : `${Math.ceil(ms / 1000)}S`;
  const backstop = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    backstop.abort();
  }, ms + DEADLINE_GRACE_MS);
  return {
    options: { signal: AbortSignal.any([signal, backstop.signal]), headers },
    expired: () => expired,
    end: () => clearTimeout(timer),
  };
}

/** Count, with the page's deadline said as such. */
async function count(request, signal, timeoutMs) {
  const call = callOptions(signal, timeoutMs);
  try {
    return await client.count(request, call.options);
  } catch (error) {
    throw call.expired() ? new PageDeadline() : error;
  } finally {
    call.end();
  }
}

/** `STATUS: message` for an error, with the page's own deadline said as such. */
function explain(error) {
  if (error instanceof PageDeadline) {
    return `DEADLINE_EXCEEDED: no answer from the server within the deadline (and ${DEADLINE_GRACE_MS / 1000} s more)`;
  }
  return describe(error);
}

// ---- the question

/** The fixed queens, "r,c" -> { row, column }. */
const fixed = new Map();

/** n as typed: a whole number (the server says whether it is a supported one). */
function typedN() {
  const n = Number($("n").value);
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
    throw new Error("n: must be a whole number");
  }
  return n;
}

/** The token as typed: printable ASCII without spaces, as an HTTP header can carry it. */
function typedToken() {
  const token = $("token").value.trim();
  if (/[^\x21-\x7e]/.test(token)) throw new Error("token: only printable ASCII, no spaces");
  return token;
}

/** The question as the form has it. */
function question() {
  typedToken();
  const n = typedN();
  const queens = [...fixed.values()].filter((q) => q.row < n && q.column < n);
  return { n, fundamental: $("fundamental").checked, fixed: queens };
}

/** The deadline the form asks for, in ms (undefined: none). */
function deadlineMs() {
  const text = $("deadline").value.trim();
  if (text === "") return undefined;
  const seconds = Number(text);
  if (!(seconds > 0)) throw new Error("deadline: must be a number of seconds above 0");
  return seconds * 1000;
}

// ---- the board of fixed queens (the completion problem)

/** Draws the editor for board size n (nothing for an unsupported n). */
function buildEditor() {
  const editor = $("editor");
  let n;
  try {
    n = typedN();
  } catch {
    n = 0;
  }
  editor.replaceChildren();
  editor.hidden = !(n >= 1 && n <= maxN);
  if (editor.hidden) return;
  for (const [key, q] of fixed) if (q.row >= n || q.column >= n) fixed.delete(key);
  const cell = Math.max(10, Math.min(36, Math.floor(360 / n)));
  editor.style.setProperty("--cell", `${cell}px`);
  editor.style.setProperty("grid-template-columns", `repeat(${n}, ${cell}px)`);
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      const square = document.createElement("button");
      square.type = "button";
      square.dataset.row = r;
      square.dataset.column = c;
      square.className = (r + c) % 2 === 0 ? "light" : "dark";
      square.setAttribute("aria-label", `row ${r}, column ${c}`);
      editor.append(square);
    }
  }
  paintEditor();
}

/** Marks the fixed queens and the squares they attack. */
function paintEditor() {
  for (const square of $("editor").children) {
    const r = Number(square.dataset.row);
    const c = Number(square.dataset.column);
    const queen = fixed.has(`${r},${c}`);
    square.classList.toggle("queen", queen);
    square.textContent = queen ? "\u265b" : "";
    square.setAttribute("aria-pressed", String(queen));
    const hit = [...fixed.values()].some((q) => attacks(q.row, q.column, r, c));
    square.classList.toggle("attacked", hit && !queen);
  }
}

/** Up to this n, a new n is counted at once (n = 16 takes about 0.1 s); a bigger board is
 * counted only when a queen is fixed on it (with the editor's deadline), so that merely
 * typing n = 20 never starts minutes of search. */
const AUTO_COUNT_MAX_N = 16;

/** A run is streaming: the editor's Count waits for its end rather than cancel it. */
let streaming = false;
/** The editor changed during a run: count again when it ends. */
let recountAfterRun = false;

/** The editor's last answer, for the progress bar of a run of the same question. */
let lastCount = { key: "", answer: undefined };

/** What a Count answers for: n and the fixed queens. */
function countKey(q) {
  const squares = q.fixed.map((f) => `${f.row},${f.column}`).sort();
  return `${q.n}|${squares.join(";")}`;
}

/** Counts what is left of the question as the editor has it, and says so. */
async function recount() {
  const out = $("completions");
  if (streaming) {
    recountAfterRun = true;
    return;
  }
  let q;
  try {
    q = question();
  } catch (error) {
    out.textContent = error.message;
    return;
  }
  out.textContent = "counting\u2026";
  const slot = turn();
  await slot.ready;
  try {
    if (slot.signal.aborted) return;
    const answer = await retryingOwnCancel(slot.signal, () =>
      count({ n: q.n, fixed: q.fixed }, slot.signal, EDITOR_DEADLINE_MS),
    );
    lastCount = { key: countKey(q), answer };
    const solutions = answer.solutions;
    if (q.fixed.length === 0) {
      const classes = answer.fundamental === undefined ? "" : `, ${answer.fundamental.toLocaleString()} up to symmetry`;
      out.textContent = `${solutions.toLocaleString()} solutions${classes}`;
    } else if (solutions === 0n) {
      out.textContent = "no solution left";
    } else {
      out.textContent = `${solutions.toLocaleString()} solution${solutions === 1n ? "" : "s"} left`;
    }
    out.dataset.solutions = String(solutions);
  } catch (error) {
    if (cancelled(error)) {
      // Cancelled by Start: counted again when the run ends.
      if (streaming) recountAfterRun = true;
      return;
    }
    delete out.dataset.solutions;
    out.textContent = pastDeadline(error)
      ? `counting takes more than ${EDITOR_DEADLINE_MS / 1000} s here; Start still streams`
      : explain(error);
  } finally {
    slot.release();
  }
}

$("editor").addEventListener("click", (event) => {
  const square = event.target.closest("button");
  if (!square || $("editor").classList.contains("busy")) return;
  const row = Number(square.dataset.row);
  const column = Number(square.dataset.column);
  const key = `${row},${column}`;
  if (fixed.has(key)) fixed.delete(key);
  else fixed.set(key, { row, column });
  paintEditor();
  recount();
});

$("clear").addEventListener("click", () => {
  fixed.clear();
  paintEditor();
  recount();
});

let retype;
$("n").addEventListener("input", () => {
  clearTimeout(retype);
  retype = setTimeout(() => {
    buildEditor();
    let n = 0;
    try {
      n = typedN();
    } catch {
      // recount says why
    }
    if (n <= AUTO_COUNT_MAX_N || fixed.size > 0) recount();
    else {
      $("completions").textContent = `n = ${n}: fix a queen to count what is left, or Start`;
      delete $("completions").dataset.solutions;
    }
  }, 300);
});

// ---- the stream

/** What the current (or last) run has shown. */
let run = null;
/** The page of boards shown: a page number, or null to follow the newest. */
let shownPage = null;

function showError(text) {
  const box = $("error");
  box.textContent = text;
  box.hidden = !text;
}

function setRunning(on) {
  $("start").disabled = on;
  $("stop").disabled = !on;
  for (const id of ["n", "fundamental", "clear"]) $(id).disabled = on;
  $("editor").classList.toggle("busy", on);
}

function setState(state) {
  $("status").dataset.state = state;
}

async function start(event) {
  event.preventDefault();
  showError("");
  $("saved").hidden = true;
  let q;
  let deadline;
  try {
    q = question();
    deadline = deadlineMs();
  } catch (error) {
    showError(error.message);
    return;
  }
  let save;
  const form = $("save").value;
  if (form) {
    try {
      save = await openSave(form, q.n);
    } catch (error) {
      showError(`save: ${error.message}`);
      return;
    }
    if (!save) return;
  }
  setRunning(true);
  streaming = true;
  const slot = turn();
  const size = Math.max(1, Math.min(q.n, 32));
  run = { n: size, window: new BoardWindow(size, KEEP), total: undefined, started: 0, seconds: 0 };
  shownPage = null;
  setState("counting");
  render();
  const ends = deadline === undefined ? undefined : performance.now() + deadline;
  const left = () => (ends === undefined ? undefined : ends - performance.now());
  let call;
  try {
    await slot.ready;
    run.total = await total(q, slot.signal, left);
    render();
    run.started = performance.now();
    setState("streaming");
    const request = { n: q.n, fundamental: q.fundamental, fixed: q.fixed, packed: true, batchSize: Math.floor(BATCH_BYTES / Math.max(1, q.n)) };
    call = callOptions(slot.signal, left());
    const stream = client.enumerate(request, call.options)[Symbol.asyncIterator]();
    // A refusal comes before the first message: only the opening is asked again.
    let next = await retryingOwnCancel(slot.signal, () => stream.next());
    let due = performance.now() + RENDER_EVERY_MS;
    while (!next.done) {
      const packed = next.value.packed;
      run.window.push(packed);
      if (save) await save.write(packed);
      if (performance.now() >= due) {
        render();
        due = performance.now() + RENDER_EVERY_MS;
      }
      next = await stream.next();
    }
    run.seconds = (performance.now() - run.started) / 1000;
    setState("done");
  } catch (error) {
    run.seconds = run.started ? (performance.now() - run.started) / 1000 : 0;
    if (call?.expired()) {
      setState("error");
      showError(explain(new PageDeadline()));
    } else if (cancelled(error)) {
      setState("stopped");
    } else {
      setState("error");
      showError(explain(error));
    }
  } finally {
    call?.end();
    streaming = false;
    slot.release();
    setRunning(false);
    render();
    if (save) await finishSave(save, $("status").dataset.state);
    if (recountAfterRun) {
      recountAfterRun = false;
      recount();
    }
  }
}

/** The run's total for the progress bar: the editor's answer, else a Count within
 * TOTAL_DEADLINE_MS (undefined when it takes longer). */
async function total(q, signal, left) {
  const runLeft = left() ?? Infinity;
  const budget = Math.min(TOTAL_DEADLINE_MS, runLeft);
  try {
    const known = lastCount.key === countKey(q) ? lastCount.answer : undefined;
    const answer =
      known ?? (await retryingOwnCancel(signal, () => count({ n: q.n, fixed: q.fixed }, signal, budget)));
    const value = q.fundamental ? answer.fundamental : answer.solutions;
    return value === undefined ? undefined : Number(value);
  } catch (error) {
    // Past the progress bar's own budget (not the run's deadline): stream without a total.
    const late = pastDeadline(error) || error instanceof PageDeadline;
    if (late && TOTAL_DEADLINE_MS < runLeft) return undefined;
    throw error;
  }
}

/** The download link's object URL of the last save, let go when the next one comes. */
let savedUrl;

async function finishSave(save, state) {
  const box = $("saved");
  if (savedUrl) URL.revokeObjectURL(savedUrl);
  savedUrl = undefined;
  try {
    if (state === "error") {
      await save.abort();
      return;
    }
    const file = await save.close();
    box.replaceChildren();
    const what = `${file.bytes.toLocaleString()} bytes${state === "stopped" ? " (stopped early)" : ""}`;
    if (file.url) {
      savedUrl = file.url;
      const link = document.createElement("a");
      link.href = file.url;
      link.download = file.name;
      link.id = "download";
      link.textContent = `Download ${file.name}`;
      box.append(link, ` (${what})`);
    } else {
      box.append(`Saved ${what} to ${file.name}`);
    }
    box.dataset.bytes = String(file.bytes);
    box.hidden = false;
  } catch (error) {
    showError(`save: ${error.message}`);
  }
}

$("form").addEventListener("submit", start);
$("stop").addEventListener("click", () => {
  if (controller) controller.abort();
  ownCancelAt = performance.now();
});

// ---- drawing

function render() {
  if (!run) return;
  const win = run.window;
  const boards = win.total;
  const status = $("status");
  status.dataset.boards = String(boards);
  status.dataset.seconds = String(run.seconds);
  $("count").textContent = boards.toLocaleString();
  $("of").textContent = run.total === undefined ? "" : `of ${run.total.toLocaleString()}`;
  const seconds = run.started ? (performance.now() - run.started) / 1000 : 0;
  const state = status.dataset.state;
  const elapsed = state === "streaming" ? seconds : run.seconds;
  $("rate").textContent =
    elapsed > 0 ? `${Math.round(boards / elapsed).toLocaleString()} boards/s` : "";
  const progress = $("progress");
  if (run.total === undefined) {
    if (state === "done") progress.value = 1;
    else progress.removeAttribute("value");
  } else {
    progress.value = run.total === 0 ? 1 : Math.min(1, boards / run.total);
  }
  const ended = { done: "done", stopped: "stopped", error: "ended by an error" }[state];
  $("done").textContent = ended ? `${ended} in ${run.seconds.toFixed(2)} s` : "";
  drawPage();
}

/** Draws the page of boards shown (the newest one while following the stream). */
function drawPage() {
  const win = run.window;
  const firstPage = Math.floor(win.dropped / PAGE);
  const lastPage = Math.max(firstPage, Math.floor((win.total - 1) / PAGE));
  const page = shownPage === null ? lastPage : Math.min(Math.max(shownPage, firstPage), lastPage);
  const from = Math.max(page * PAGE, win.dropped);
  const to = Math.min((page + 1) * PAGE, win.total);
  const box = $("boards");
  while (box.children.length < to - from) box.append(boardFigure());
  while (box.children.length > Math.max(0, to - from)) box.lastChild.remove();
  for (let i = from; i < to; i++) {
    const figure = box.children[i - from];
    const canvas = figure.firstChild;
    canvas.columns = Uint8Array.from(win.board(i));
    drawBoard(canvas, canvas.columns);
    figure.lastChild.textContent = `#${(i + 1).toLocaleString()}`;
  }
  $("page").textContent =
    win.total === 0 ? "no boards" : `boards ${(from + 1).toLocaleString()}\u2013${to.toLocaleString()} of ${win.total.toLocaleString()}`;
  $("dropped").textContent =
    win.dropped > 0 ? `${win.dropped.toLocaleString()} dropped from view (the page keeps the newest ${KEEP.toLocaleString()})` : "";
  $("dropped").dataset.dropped = String(win.dropped);
  $("first").disabled = page <= firstPage;
  $("prev").disabled = page <= firstPage;
  $("next").disabled = page >= lastPage;
  $("last").disabled = shownPage === null;
  $("boards").dataset.page = String(page);
}

/** A figure holding one board's canvas (hover shows what the row's queen attacks). */
function boardFigure() {
  const figure = document.createElement("figure");
  const canvas = document.createElement("canvas");
  const caption = document.createElement("figcaption");
  const hover = (event) => {
    const cell = cellSize(canvas.columns.length);
    const row = Math.floor(event.offsetY / cell);
    drawBoard(canvas, canvas.columns, row >= 0 && row < canvas.columns.length ? row : undefined);
  };
  canvas.addEventListener("mousemove", hover);
  canvas.addEventListener("mouseleave", () => drawBoard(canvas, canvas.columns));
  figure.append(canvas, caption);
  return figure;
}

function goTo(page) {
  shownPage = page;
  if (run) drawPage();
}
$("first").addEventListener("click", () => goTo(0));
$("prev").addEventListener("click", () => goTo(Number($("boards").dataset.page) - 1));
$("next").addEventListener("click", () => goTo(Number($("boards").dataset.page) + 1));
$("last").addEventListener("click", () => goTo(null));

// ---- start up

async function settings() {
  try {
    const response = await fetch("settings.json", { cache: "no-store" });
    const s = await response.json();
    maxN = s.max_n;
    $("n").max = String(maxN);
    $("token-label").classList.toggle("needed", Boolean(s.tokens));
  } catch {
    // An older or other server: the defaults stand.
  }
}

await settings();
buildEditor();
recount();
