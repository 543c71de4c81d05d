// The front-coded layout of packed boards (FrontCoded in proto/queens.proto) read back into
// the records the server would have sent: n bytes a board, byte r the column of row r's
// queen. Asking for it is index.js's.

/** Largest n whose units are 4 bits (two a byte); larger boards use a byte a unit. */
const NIBBLE_MAX_N = 16;

/**
 * The `boards` boards of size n (1 to 32) that the front-coded `data` (a Uint8Array) holds,
 * as one Uint8Array of records; throws a RangeError when the data is not what its lengths
 * say.
 */
export function decodeFrontCoded(n, boards, data) {
  if (!(n >= 1 && n <= 32)) throw new RangeError(`front-coded boards of n = ${n}`);
  const nibbles = n <= NIBBLE_MAX_N;
  const held = nibbles ? data.length * 2 : data.length;
  const unit = nibbles ? (i) => (i & 1 ? data[i >> 1] & 15 : data[i >> 1] >> 4) : (i) => data[i];
  if (boards > held) throw new RangeError(`front-coded data of ${data.length} bytes cannot hold ${boards} boards`);
  const withPrefix = new Array(n).fill(0);
  for (let i = 0; i < boards; i++) {
    const shared = unit(i);
    if (shared > n - 1 || (i === 0 && shared !== 0)) throw new RangeError(`front-coded data of n = ${n} is malformed at board ${i}`);
    withPrefix[shared]++;
  }
  // Where each column's units start: column c is sent by the boards whose prefix is at most c.
  const at = new Array(n).fill(0);
  let next = boards;
  let sending = 0;
  for (let c = 0; c < n - 1; c++) {
    sending += withPrefix[c];
    at[c] = next;
    next += sending;
  }
  const want = nibbles ? Math.ceil(next / 2) : next;
  if (data.length !== want) {
    throw new RangeError(`front-coded data holds ${data.length} bytes where its ${boards} boards need ${want}`);
  }
  let free = 0;
  for (let c = 0; c < n; c++) free ^= c;
  const out = new Uint8Array(boards * n);
  for (let i = 0, base = 0; i < boards; i++, base += n) {
    const shared = unit(i);
    let last = free;
    for (let c = 0; c < n - 1; c++) {
      const value = c >= shared ? unit(at[c]++) : out[base - n + c];
      if (value >= n) throw new RangeError(`front-coded data of n = ${n} is malformed at board ${i}`);
      out[base + c] = value;
      last ^= value;
    }
    if (last >= n) throw new RangeError(`front-coded data of n = ${n} is malformed at board ${i}`);
    out[base + n - 1] = last;
  }
  return out;
}
