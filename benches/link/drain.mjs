// The shaped-link bench's Node client (`shaped.py` runs it from a project where the package
// queens-client is installed from its tarball): Enumerate's packed batches drained as
// Uint8Arrays, with or without compressed responses. Prints one JSON line: boards received,
// and the first and last board. Usage: node drain.mjs HOST:PORT N COMPRESSION (none|gzip).

import { createClient } from "queens-client";

const [addr, nText = "16", compression = "none"] = process.argv.slice(2);
const n = Number(nText);
// "today": no option at all, as a caller who never heard of compression.
const client = createClient(addr, compression === "today" ? {} : { acceptCompression: compression !== "none" });
let boards = 0;
let first;
let last;
try {
  for await (const bytes of client.enumerate(n)) {
    if (first === undefined) first = Array.from(bytes.subarray(0, n));
    boards += bytes.length / n;
    last = bytes.subarray(bytes.length - n);
  }
} finally {
  client.close();
}
console.log(JSON.stringify({ boards, first, last: last && Array.from(last) }));
