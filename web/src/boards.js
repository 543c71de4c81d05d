// Boards: the packed records a stream delivers, the window of them the page keeps, and how
// one is drawn (queens, and the lines a queen attacks). No network, no page state here.

/** The queen squares of record `i` of `packed`: `columns[r]` is row r's column. */
export function record(packed, n, i) {
  return packed.subarray(i * n, (i + 1) * n);
}

/** One board as the CLI's --compact line: `1,3,0,2`. */
export function compactLine(columns) {
  return Array.prototype.join.call(columns, ",");
}

/** Text lines (`1,3,0,2\n` each) for every record of `packed`. */
export function compactText(packed, n) {
  const lines = [];
  for (let i = 0; i * n < packed.length; i++) lines.push(compactLine(record(packed, n, i)));
  return lines.length ? lines.join("\n") + "\n" : "";
}

/**
 * The last `capacity` boards of a stream, in one buffer (a ring), so that memory stays
 * bounded whatever the size of the result; `dropped` says how many went out of it.
 */
export class BoardWindow {
  constructor(n, capacity) {
    this.n = n;
    this.capacity = capacity;
    this.bytes = new Uint8Array(n * capacity);
    this.total = 0; // boards pushed in all
  }

  /** Boards kept. */
  get size() {
    return Math.min(this.total, this.capacity);
  }

  /** Boards that went out of the window. */
  get dropped() {
    return this.total - this.size;
  }

  /** Takes a message's packed records (only the last `capacity` of them are copied). */
  push(packed) {
    const n = this.n;
    const boards = Math.floor(packed.length / n);
    const skip = Math.max(0, boards - this.capacity);
    for (let i = skip; i < boards; i++) {
      const slot = (this.total + i) % this.capacity;
      this.bytes.set(packed.subarray(i * n, (i + 1) * n), slot * n);
    }
    this.total += boards;
  }

  /** Board number `index` of the whole stream (0-based), if it is still kept. */
  board(index) {
    if (index < this.dropped || index >= this.total) return undefined;
    const slot = index % this.capacity;
    return this.bytes.subarray(slot * this.n, (slot + 1) * this.n);
  }
}

/** Whether square (r, c) is attacked by (or holds) the queen at (qr, qc). */
export function attacks(qr, qc, r, c) {
  return r === qr || c === qc || r - c === qr - qc || r + c === qr + qc;
}

/** Pixels a square takes on a board of size n: boards are about 120 px wide, at least 4 px a square. */
export function cellSize(n) {
  return Math.max(4, Math.floor(120 / n));
}

const LIGHT = "#eeeed2";
const DARK = "#769656";
const ATTACKED_LIGHT = "#f6c1a6";
const ATTACKED_DARK = "#d9835d";
const QUEEN = "#1b1b1b";

/**
 * Draws board `columns` on `canvas` (sized here): squares, queens, and when `hover` is a
 * row, the lines its queen attacks.
 */
export function drawBoard(canvas, columns, hover) {
  const n = columns.length;
  const cell = cellSize(n);
  const size = cell * n;
  if (canvas.width !== size) {
    canvas.width = size;
    canvas.height = size;
  }
  const g = canvas.getContext("2d");
  const hr = hover === undefined ? -1 : hover;
  const hc = hr >= 0 ? columns[hr] : -1;
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      const light = (r + c) % 2 === 0;
      const hit = hr >= 0 && attacks(hr, hc, r, c);
      g.fillStyle = hit ? (light ? ATTACKED_LIGHT : ATTACKED_DARK) : light ? LIGHT : DARK;
      g.fillRect(c * cell, r * cell, cell, cell);
    }
  }
  g.fillStyle = QUEEN;
  const radius = Math.max(1.5, cell * 0.34);
  for (let r = 0; r < n; r++) {
    g.beginPath();
    g.arc(columns[r] * cell + cell / 2, r * cell + cell / 2, radius, 0, 2 * Math.PI);
    g.fill();
  }
}
