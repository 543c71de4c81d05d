// The shaped-link bench's Node client (`shaped.py` runs it from a project where the package
// queens-client is installed from its tarball): Enumerate's packed batches drained as
// Uint8Arrays, with or without compressed responses, or in the front-coded layout. Prints one
// JSON line: boards received, and the first and last board.
// Usage: node drain.mjs HOST:PORT N COMPRESSION (none|gzip|front).

import { createClient } from "queens-client";

const [addr, nText = "16", compression = "none"] = process.argv.slice(2);
const n = Number(nText);
// "today": no option at all, as a caller who never heard of compression.
const client = createClient(addr, compression === "today" ? {} : { acceptCompression: compression === "gzip" });
const asked = compression === "front" ? { layout: "front-coded" } : {};
let boards = 0;
let first;
let last;
try {
  for await (const bytes of client.enumerate(n, asked)) {
    if (first === undefined) first = Array.from(bytes.subarray(0, n));
    boards += bytes.length / n;
    last = bytes.subarray(bytes.length - n);
  }
} finally {
  client.close();
}
console.log(JSON.stringify({ boards, first, last: last && Array.from(last) }));
