/**
 * Redis's answer to a command blocked on a node that turns from master into replica (a cluster
 * failover, or a replica promoted by hand): the wait is cut off rather than left to hang. A worker
 * waiting for jobs gets it, and BullMQ then waits again, on the new master.
 */
const UNBLOCKED_BY_FAILOVER = /^UNBLOCKED\b.*(instance state changed|master -> replica)/;

/** Whether `error` is a blocked command cut off by its node turning replica (see {@link UNBLOCKED_BY_FAILOVER}), not a fault. */
export function isFailoverCutOff(error: unknown): boolean {
  return error instanceof Error && UNBLOCKED_BY_FAILOVER.test(error.message);
}
