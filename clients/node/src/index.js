// The queens client for Node: a small API over the generated messages (./gen/queens_pb.js,
// from proto/queens.proto by protoc-gen-es) and Connect's gRPC transport over HTTP/2
// (@connectrpc/connect-node). Counts come back as BigInts; boards come as packed records
// (EnumerateRequest.packed: n bytes per board, byte r the column of row r's queen), one
// Uint8Array per response message, a view of the received bytes with no object per board.
// This file does not retry or resume: a broken stream throws, and `startAfter` with the last
// board taken asks for the rest.

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as createConnectClient } from "@connectrpc/connect";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";
import { Queens, CountRequestSchema, EnumerateRequestSchema, PackedLayout } from "./gen/queens_pb.js";
import { decodeFrontCoded } from "./front.js";

export * as messages from "./gen/queens_pb.js";
export { decodeFrontCoded };

/** Enumerate's layouts of packed boards, by the name the `layout` option takes. */
const LAYOUTS = { records: PackedLayout.RECORDS, "front-coded": PackedLayout.FRONT_CODED };

/** gRPC status codes by name (the numbers of the gRPC protocol, as in `QueensError.code`). */
export const Status = Object.freeze({
  OK: 0,
  CANCELLED: Code.Canceled,
  UNKNOWN: Code.Unknown,
  INVALID_ARGUMENT: Code.InvalidArgument,
  DEADLINE_EXCEEDED: Code.DeadlineExceeded,
  NOT_FOUND: Code.NotFound,
  ALREADY_EXISTS: Code.AlreadyExists,
  PERMISSION_DENIED: Code.PermissionDenied,
  RESOURCE_EXHAUSTED: Code.ResourceExhausted,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  ABORTED: Code.Aborted,
  OUT_OF_RANGE: Code.OutOfRange,
  UNIMPLEMENTED: Code.Unimplemented,
  INTERNAL: Code.Internal,
  UNAVAILABLE: Code.Unavailable,
  DATA_LOSS: Code.DataLoss,
  UNAUTHENTICATED: Code.Unauthenticated,
});

// The HTTP/2 receive windows, of each stream and of the connection: 4 MiB instead of 64 KiB,
// so that the server sends its 1 MiB messages without waiting for a window update every
// 64 KiB. Node's http2 takes the stream's in the settings, the connection's only from
// session.setLocalWindowSize (SessionWindows), as grpc-js does for its
// 'grpc-node.flow_control_window'. Draining n = 16 from a release server on a 2-core
// machine, the stream's window brought the client's CPU from 1.0 to 0.3-0.4 seconds (14.8 M
// boards).
const WINDOW_BYTES = 4 << 20;

const STATUS_NAMES = Object.fromEntries(Object.entries(Status).map(([name, code]) => [code, name]));

/**
 * A call that failed: `code` is its gRPC status (a number, see `Status`), `codeName` its
 * name ("UNAUTHENTICATED"), `message` the server's message as sent (a bad request names the
 * field). The transport's own error is the `cause`.
 */
export class QueensError extends Error {
  constructor(code, message, options) {
    super(message, options);
    this.name = "QueensError";
    this.code = code;
    this.codeName = STATUS_NAMES[code] ?? String(code);
  }
}

// The system's errors of a broken or refused connection. Connect reports a connection reset
// in the middle of a stream as ABORTED, and a connection closed under it as CANCELLED; gRPC's
// clients report both as UNAVAILABLE, the status to retry on, and so does this one (CANCELLED
// stays for a call the caller aborted).
const CONNECTION_ERRORS = new Set(["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"]);

/** The system's code (ECONNRESET, ERR_SSL_...) behind an error, if any. */
function systemCode(error) {
  for (let cause = error; cause; cause = cause.cause) if (typeof cause.code === "string") return cause.code;
  return undefined;
}

/**
 * Any error of a call as a QueensError (a ConnectError's code is the gRPC status); `signal` is
 * the call's, to tell a cancel of the caller's from a closed connection.
 */
function toQueensError(error, signal) {
  if (error instanceof QueensError) return error;
  const connect = ConnectError.from(error);
  const lost = connect.code === Code.Canceled && !signal?.aborted;
  const code = lost || CONNECTION_ERRORS.has(systemCode(error)) ? Code.Unavailable : connect.code;
  return new QueensError(code, connect.rawMessage, { cause: error });
}

/**
 * The base URL and TLS of a target: "host:port", "http://host:port" or "https://host:port".
 * A bare "host:port" is plaintext unless a certificate authority is given.
 */
function baseUrl(target, tls) {
  const match = /^(?:(https?):\/\/)?([^/]+)\/?$/i.exec(String(target));
  if (!match) throw new TypeError(`target ${target}: expected HOST:PORT, http://HOST:PORT or https://HOST:PORT`);
  const scheme = match[1]?.toLowerCase() ?? (tls ? "https" : "http");
  return new URL(`${scheme}://${match[2]}`);
}

/** An interceptor that adds "authorization: Bearer <token>" to every call. */
function bearer(token) {
  const value = `Bearer ${token}`;
  return (next) => (request) => {
    request.header.set("authorization", value);
    return next(request);
  };
}

/** The request's queens as Square messages: [[row, column], ...] or [{row, column}, ...]. */
function squares(fixed = []) {
  return fixed.map((square) =>
    Array.isArray(square) ? { row: square[0], column: square[1] } : { row: square.row, column: square.column },
  );
}

/** A shard as a Shard message: {index, count} or [index, count]; undefined for none. */
function shardOf(shard) {
  if (shard === undefined) return undefined;
  return Array.isArray(shard) ? { index: shard[0], count: shard[1] } : { index: shard.index, count: shard.count };
}

function countRequest(n, { fixed, shard } = {}) {
  return create(CountRequestSchema, { n, fixed: squares(fixed), shard: shardOf(shard) });
}

/** Call options of a call: an AbortSignal and a timeout in milliseconds. */
function callOptions({ signal, timeoutMs } = {}) {
  return { signal, timeoutMs };
}

/** Board messages (their `columns`) as packed records: what a server older than `packed` sends. */
function boardsToPacked(boards, n) {
  const bytes = new Uint8Array(boards.length * n);
  boards.forEach((board, i) => bytes.set(board.columns, i * n));
  return bytes;
}

/**
 * Connect's session manager, with each connection's receive window set to `windowBytes` once,
 * when its first stream opens (the streams' windows come from the settings).
 */
class SessionWindows extends Http2SessionManager {
  widened = new WeakSet();

  constructor(url, windowBytes, options) {
    super(url, {}, { ...options, settings: { initialWindowSize: windowBytes } });
    this.windowBytes = windowBytes;
  }

  async request(...args) {
    const stream = await super.request(...args);
    const session = stream.session;
    if (session && !this.widened.has(session)) {
      this.widened.add(session);
      session.setLocalWindowSize(this.windowBytes);
    }
    return stream;
  }
}

/**
 * A client of the queens server at `target` ("host:port", "http://host:port" or
 * "https://host:port"). Options: `token`, sent as "authorization: Bearer <token>" on every
 * call; `ca`, the PEM certificate authority to trust over TLS (the system's by default; with
 * a bare "host:port" it also means TLS); `windowBytes`, the HTTP/2 receive window of the
 * connection and of each stream, how far the server may send ahead of the reader (default
 * 4 MiB); `acceptCompression`, whether the server may compress its responses (default true:
 * gzip, which Connect undoes before the batches are yielded; false asks for them
 * uncompressed). `close()` ends its connection; an idle connection does not keep the process
 * alive.
 */
export function createClient(target, { token, ca, windowBytes = WINDOW_BYTES, acceptCompression = true } = {}) {
  const url = baseUrl(target, ca !== undefined);
  if (ca !== undefined && url.protocol !== "https:") throw new TypeError("ca needs an https:// target");
  const sessionManager = new SessionWindows(url, windowBytes, ca !== undefined ? { ca } : {});
  const transport = createGrpcTransport({
    baseUrl: url.href,
    sessionManager,
    interceptors: token ? [bearer(token)] : [],
    // Connect's default accepts gzip and brotli (the server offers gzip); none sends no
    // grpc-accept-encoding at all.
    ...(acceptCompression ? {} : { acceptCompression: [] }),
  });
  const rpc = createConnectClient(Queens, transport);

  /** Packed batches of the boards of n, as the server sends them. */
  async function* enumerate(n, options = {}) {
    const layout = LAYOUTS[options.layout ?? "records"];
    if (layout === undefined) throw new TypeError(`layout must be "records" or "front-coded", not ${JSON.stringify(options.layout)}`);
    const request = create(EnumerateRequestSchema, {
      n,
      fundamental: options.fundamental ?? false,
      fixed: squares(options.fixed),
      shard: shardOf(options.shard),
      startAfter: options.startAfter ? Array.from(options.startAfter) : [],
      limit: BigInt(options.limit ?? 0),
      batchSize: options.batchSize ?? 0,
      compact: true,
      packed: options.packed ?? true,
      layout,
    });
    try {
      for await (const reply of rpc.enumerate(request, callOptions(options))) {
        const coded = reply.frontCoded;
        let bytes;
        if (coded !== undefined) {
          try {
            bytes = decodeFrontCoded(n, coded.boards, coded.data);
          } catch (error) {
            throw new QueensError(Status.INTERNAL, `malformed response: ${error.message}`, { cause: error });
          }
        } else {
          bytes = reply.packed.length > 0 ? reply.packed : boardsToPacked(reply.boards, n);
        }
        if (bytes.length > 0) yield bytes;
      }
    } catch (error) {
      throw toQueensError(error, options.signal);
    }
  }

  return {
    /**
     * Counts the solutions of n: { solutions, fundamental, turnFixed } as BigInts;
     * `fundamental` is undefined with fixed queens, `turnFixed` except on shards that have it.
     */
    async count(n, options = {}) {
      try {
        const reply = await rpc.count(countRequest(n, options), callOptions(options));
        return { solutions: reply.solutions, fundamental: reply.fundamental, turnFixed: reply.turnFixed };
      } catch (error) {
        throw toQueensError(error, options.signal);
      }
    },

    /**
     * Counts with progress: an async iterator of updates { solutions, fundamental,
     * subproblemsDone, subproblemsTotal, elapsedSeconds, done, turnFixed }; the last has
     * done = true and the result of `count`.
     */
    async *countProgress(n, options = {}) {
      try {
        for await (const u of rpc.countProgress(countRequest(n, options), callOptions(options))) {
          yield {
            solutions: u.solutions,
            fundamental: u.fundamental,
            subproblemsDone: u.subproblemsDone,
            subproblemsTotal: u.subproblemsTotal,
            elapsedSeconds: u.elapsedSeconds,
            done: u.done,
            turnFixed: u.turnFixed,
          };
        }
      } catch (error) {
        throw toQueensError(error, options.signal);
      }
    },

    /**
     * The solutions of n in lexicographic order, as packed records: one Uint8Array per
     * response message, n bytes per board. Options: fundamental, fixed, shard, startAfter
     * (a board of n columns: only the boards after it), limit, batchSize, signal, timeoutMs;
     * packed: false asks for Board messages instead (slower), packed here all the same;
     * layout: "front-coded" asks for the boards without the prefix each shares with the one
     * before (about a quarter of the bytes at n = 16), decoded here into the same records
     * (for slow links; "records", the default, is the fastest on fast ones).
     */
    enumerate,

    /** The same boards as `enumerate`, one array of n columns per board. */
    async *boards(n, options = {}) {
      for await (const bytes of enumerate(n, options)) {
        for (let i = 0; i < bytes.length; i += n) yield Array.from(bytes.subarray(i, i + n));
      }
    },

    /**
     * The Connect client of queens.v1.Queens on the same connection, for the raw calls:
     * `rpc.enumerate({ n: 10, compact: true })` yields the response messages as sent. Its
     * errors are ConnectErrors, not QueensErrors.
     */
    rpc,

    /** Ends the connection; calls still running fail. */
    close() {
      sessionManager.abort();
    },
  };
}
