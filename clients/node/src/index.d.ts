// Types of index.js, written by hand beside it.

import type { Client } from "@connectrpc/connect";
import type { Queens } from "./gen/queens_pb.js";

export * as messages from "./gen/queens_pb.js";

/** gRPC status codes by name. */
export declare const Status: Readonly<{
  OK: 0;
  CANCELLED: 1;
  UNKNOWN: 2;
  INVALID_ARGUMENT: 3;
  DEADLINE_EXCEEDED: 4;
  NOT_FOUND: 5;
  ALREADY_EXISTS: 6;
  PERMISSION_DENIED: 7;
  RESOURCE_EXHAUSTED: 8;
  FAILED_PRECONDITION: 9;
  ABORTED: 10;
  OUT_OF_RANGE: 11;
  UNIMPLEMENTED: 12;
  INTERNAL: 13;
  UNAVAILABLE: 14;
  DATA_LOSS: 15;
  UNAUTHENTICATED: 16;
}>;

/** A failed call: its gRPC status and the server's message. */
export declare class QueensError extends Error {
  /** The gRPC status code (see `Status`). */
  readonly code: number;
  /** The status's name, e.g. "UNAUTHENTICATED". */
  readonly codeName: string;
}

/** A queen: [row, column] or {row, column}, counted from 0. */
export type Square = readonly [number, number] | { row: number; column: number };

/** Part `index` of `count` disjoint parts of a search: {index, count} or [index, count]. */
export type Shard = readonly [number, number] | { index: number; count: number };

export interface ClientOptions {
  /** Sent as "authorization: Bearer <token>" on every call. */
  token?: string;
  /** PEM certificate authority to trust over TLS (default: the system's). */
  ca?: string | Uint8Array;
  /** HTTP/2 receive window of the connection and of each stream (default 4 MiB). */
  windowBytes?: number;
  /** Whether the server may compress its responses (gzip; default true). */
  acceptCompression?: boolean;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface CountOptions extends CallOptions {
  /** Queens every counted solution must contain. */
  fixed?: readonly Square[];
  shard?: Shard;
}

export interface EnumerateOptions extends CountOptions {
  /** One board per symmetry class. */
  fundamental?: boolean;
  /** Only the boards after this column vector (n columns, each below n). */
  startAfter?: ArrayLike<number>;
  /** At most this many boards; 0 or absent: no limit. */
  limit?: number | bigint;
  /** At most this many boards per message; 0 or absent: the server chooses. */
  batchSize?: number;
  /** false: ask for Board messages (slower), yielded as packed records all the same. */
  packed?: boolean;
  /**
   * How packed boards travel: "records" (default) or "front-coded" (the prefix each board
   * shares with the one before left out: about a quarter of the bytes at n = 16, for slow
   * links), yielded as the same records.
   */
  layout?: "records" | "front-coded";
}

export interface CountResult {
  solutions: bigint;
  /** Symmetry classes; undefined with fixed queens and on shards that carry `turnFixed`. */
  fundamental?: bigint;
  turnFixed?: bigint;
}

export interface CountUpdate extends CountResult {
  subproblemsDone: bigint;
  subproblemsTotal: bigint;
  elapsedSeconds: number;
  /** True on the last update only, which carries the exact result. */
  done: boolean;
}

export interface QueensClient {
  count(n: number, options?: CountOptions): Promise<CountResult>;
  countProgress(n: number, options?: CountOptions): AsyncGenerator<CountUpdate, void, undefined>;
  /** Packed records, n bytes per board (byte r: the column of row r's queen), one array per message. */
  enumerate(n: number, options?: EnumerateOptions): AsyncGenerator<Uint8Array, void, undefined>;
  /** One array of n columns per board. */
  boards(n: number, options?: EnumerateOptions): AsyncGenerator<number[], void, undefined>;
  /** The raw calls (Connect's client of queens.v1.Queens); they throw ConnectErrors. */
  readonly rpc: Client<typeof Queens>;
  close(): void;
}

/** A client of the server at "host:port", "http://host:port" or "https://host:port". */
export declare function createClient(target: string, options?: ClientOptions): QueensClient;

/**
 * The records (n bytes a board) of front-coded data (FrontCoded.data holding `boards` boards
 * of size n); throws a RangeError when the data is malformed.
 */
export function decodeFrontCoded(n: number, boards: number, data: Uint8Array): Uint8Array;
