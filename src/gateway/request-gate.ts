/**
 * Admits export requests at the configured rate. Every request to the export endpoint, retries
 * and 401 re-sends included, passes `acquire()` first.
 */
export interface RequestGate {
  acquire(): Promise<void>;
}
