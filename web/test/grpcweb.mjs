// gRPC-Web by hand, for the tests: the length-prefixed frames of a request and a response
// (flag 0x00: a message, 0x80: the trailers as HTTP/1 header lines), the few protobuf fields
// the tests read, and one call over fetch (HTTP/1.1) or node:http2. No generated code: what
// is checked is the wire itself.

import http2 from "node:http2";

/** A frame: flag byte, 4-byte big-endian length, payload. */
export function frame(flag, payload) {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = flag;
  out.writeUInt32BE(payload.length, 1);
  Buffer.from(payload).copy(out, 5);
  return out;
}

/** A protobuf varint. */
function varint(value) {
  const bytes = [];
  let v = BigInt(value);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    bytes.push(b);
  } while (v);
  return bytes;
}

/** Encodes a message of (field, value) pairs: numbers as varints, Buffers and nested arrays
 * of pairs as length-delimited fields. */
export function encode(fields) {
  const out = [];
  for (const [field, value] of fields) {
    if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") {
      out.push(...varint(field << 3), ...varint(Number(value)));
    } else {
      const bytes = Array.isArray(value) ? encode(value) : Buffer.from(value);
      out.push(...varint((field << 3) | 2), ...varint(bytes.length), ...bytes);
    }
  }
  return Buffer.from(out);
}

/** Decodes a message into { field: [values] } (varints as BigInt, length-delimited as Buffer,
 * 64-bit as a Buffer of 8). */
export function decode(bytes) {
  const fields = {};
  let i = 0;
  const readVarint = () => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = bytes[i++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  while (i < bytes.length) {
    const key = Number(readVarint());
    const field = key >> 3;
    let value;
    switch (key & 7) {
      case 0:
        value = readVarint();
        break;
      case 1:
        value = bytes.subarray(i, i + 8);
        i += 8;
        break;
      case 2: {
        const len = Number(readVarint());
        value = bytes.subarray(i, i + len);
        i += len;
        break;
      }
      default:
        throw new Error(`wire type ${key & 7}`);
    }
    (fields[field] ??= []).push(value);
  }
  return fields;
}

/** Splits a response body into its frames: { messages: [Buffer], trailers: {name: value} or
 * undefined, rest: bytes after the trailers frame }. */
export function frames(body) {
  const messages = [];
  let trailers;
  let i = 0;
  while (i + 5 <= body.length && trailers === undefined) {
    const flag = body[i];
    const len = body.readUInt32BE(i + 1);
    const payload = body.subarray(i + 5, i + 5 + len);
    if (payload.length < len) throw new Error(`a frame of ${len} bytes is cut at ${payload.length}`);
    i += 5 + len;
    if (flag & 0x80) {
      trailers = {};
      for (const line of payload.toString("latin1").split("\r\n")) {
        if (!line) continue;
        const colon = line.indexOf(":");
        trailers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
    } else {
      if (flag !== 0) throw new Error(`frame flag ${flag}`);
      messages.push(payload);
    }
  }
  return { messages, trailers, rest: body.subarray(i) };
}

/** The gRPC status of a response: its trailers frame, or its headers (trailers-only). */
export function status(response) {
  const from = response.trailers?.["grpc-status"] !== undefined ? response.trailers : response.headers;
  return {
    code: Number(from["grpc-status"]),
    message: decodeURIComponent(from["grpc-message"] ?? ""),
  };
}

/** POSTs one gRPC-Web call over HTTP/1.1 (fetch): resolves to { http, headers, messages,
 * trailers, rest }. */
export async function call(base, method, request, headers = {}) {
  const response = await fetch(`${base}/queens.v1.Queens/${method}`, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1", ...headers },
    body: frame(0, request),
  });
  const body = Buffer.from(await response.arrayBuffer());
  return {
    http: response.status,
    headers: Object.fromEntries(response.headers),
    ...frames(body),
  };
}

/** The same call over HTTP/2 without TLS (prior knowledge), through node:http2. */
export function callH2(base, method, request, headers = {}) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(base);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": `/queens.v1.Queens/${method}`,
      "content-type": "application/grpc-web+proto",
      "x-grpc-web": "1",
      ...headers,
    });
    let head;
    const chunks = [];
    stream.on("response", (h) => (head = h));
    stream.on("data", (c) => chunks.push(c));
    stream.on("error", reject);
    stream.on("end", () => {
      session.close();
      const headers = Object.fromEntries(Object.entries(head).filter(([k]) => !k.startsWith(":")));
      resolve({ http: head[":status"], headers, ...frames(Buffer.concat(chunks)) });
    });
    stream.end(frame(0, request));
  });
}
