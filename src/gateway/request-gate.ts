/**
 * Admits export requests at the configured rate. Every request to the export endpoint, retries
 * and 401 re-sends included, passes `acquire()` first, and reports `answered()` on the permit it
 * got once the service has answered (or the attempt ended), whatever the outcome.
 */
export interface RequestGate {
  acquire(): Promise<RequestPermit>;
}

/** One admitted request. */
export interface RequestPermit {
  /**
   * The request has certainly reached the service by now: its place in the rate window counts from
   * this moment rather than from admission, so a sender delayed between the two (a busy event loop,
   * a slow connect) cannot make the service see more than the limit in any window.
   */
  answered(): Promise<void>;
}
