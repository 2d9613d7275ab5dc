import type { Logger } from '../logging/logger.js';

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

export interface WorkerErrorLogOptions {
  readonly logger: Logger;
  /** Whether Redis is known to be down: its own log line says so, and BullMQ reports every command that failed. */
  readonly redisDown: () => boolean;
  /** Errors after one logged are held back this long. @defaultValue 10 s */
  readonly quietMs?: number;
  readonly now?: () => number;
}

/**
 * What a BullMQ worker's `error` events become in the log: one line per error, at most one every
 * `quietMs`, none while Redis is down; a failover cutting off its wait for jobs is a warning, once
 * per failover and waiting connection, never held back by an error nor holding one back.
 */
export function workerErrorLog(options: WorkerErrorLogOptions): (error: Error) => void {
  const { logger, redisDown, quietMs = 10_000, now = Date.now } = options;
  let lastError = Number.NEGATIVE_INFINITY;
  return (error) => {
    if (redisDown()) return;
    if (isFailoverCutOff(error)) {
      logger.warn({ redisReply: error.message }, "the queue's Redis master was replaced (a failover): the wait for jobs it cut off goes on with the new master");
      return;
    }
    if (now() - lastError < quietMs) return;
    lastError = now();
    logger.error({ err: error }, 'worker error');
  };
}
