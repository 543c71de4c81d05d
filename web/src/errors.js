// How a failed call is shown: its gRPC status name and message, as the server sent them,
// or what the browser knows when there was no answer at all (the server is gone).

import { Code, ConnectError } from "@connectrpc/connect";

/** `InvalidArgument` -> `INVALID_ARGUMENT`. */
function statusName(code) {
  const name = Code[code] ?? `CODE_${code}`;
  return name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** Whether the call was cancelled by this page (Stop, or a newer question). */
export function cancelled(error) {
  return ConnectError.from(error).code === Code.Canceled;
}

/** Whether the server refused for want of a slot (RESOURCE_EXHAUSTED). */
export function busy(error) {
  return ConnectError.from(error).code === Code.ResourceExhausted;
}

/** Whether the call ran past its deadline. */
export function pastDeadline(error) {
  return ConnectError.from(error).code === Code.DeadlineExceeded;
}

/** `STATUS: message` for any error a call ends with. */
export function describe(error) {
  const e = ConnectError.from(error);
  // No HTTP answer at all (connection refused, reset, server gone): fetch's TypeError.
  if (e.code === Code.Unknown && (e.cause instanceof TypeError || /fetch|network/i.test(e.rawMessage))) {
    return `UNAVAILABLE: the server cannot be reached or went away (${e.rawMessage})`;
  }
  return `${statusName(e.code)}: ${e.rawMessage}`;
}
