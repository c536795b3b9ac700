import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";

/**
 * A fetch for the SDK's streamable-HTTP client transport that gives every request a signal of its own, tied to the
 * signal the transport passes with `AbortSignal.any` (which holds its sources weakly and adds them no listener).
 *
 * The transport passes one AbortSignal, alive as long as the connection, to every request; Node's fetch adds an
 * "abort" listener to the signal it is given and drops it only when the request is garbage-collected. Over a long
 * training run the listeners piled up on that one signal (MaxListenersExceededWarning after 1,500 calls). Aborting
 * the transport's signal (closing the connection) still aborts every request in flight.
 */
export const perRequestSignalFetch: FetchLike = (url, init) => {
  const signal = init?.signal;
  if (!signal) return fetch(url, init);
  return fetch(url, Object.assign({}, init, { signal: AbortSignal.any([signal]) }));
};
