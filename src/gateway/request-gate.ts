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
  /** The request is being handed to its connection now: from here on the service may see it. */
  sending(): void;
  /**
   * The request has certainly reached the service by now: its place in the rate window moves from
   * admission to the moment it was sent (the time since `sending()` is taken off the answer's), so
   * a sender delayed between admission and sending (a busy event loop, a slow token) cannot make
   * the service see more than the limit in any window, and the service's time to answer does not
   * keep the place taken. Without `sending()` the place counts from the answer.
   */
  answered(): Promise<void>;
}
