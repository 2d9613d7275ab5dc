/**
 * Admits export requests at the configured rate. Every request to the export endpoint, retries
 * and 401 re-sends included, passes `acquire()` first, reports `sending()` on the permit it got
 * just before it goes out, and `answered()` once the service has answered (or the attempt ended),
 * whatever the outcome.
 */
export interface RequestGate {
  acquire(): Promise<RequestPermit>;
}

/** One admitted request. */
export interface RequestPermit {
  /**
   * The request goes out now. A permit admitted long before (a long wait for a token) is admitted
   * again first, so the request's place in the rate window holds from its send to its answer; it
   * then resolves `true`, and the token taken before has aged by that wait.
   */
  sending(): Promise<boolean>;
  /**
   * The request has certainly reached the service by now: its place in the rate window counts from
   * this moment rather than from admission, so a sender delayed between the two (a busy event loop,
   * a slow connect) cannot make the service see more than the limit in any window.
   */
  answered(): Promise<void>;
}
