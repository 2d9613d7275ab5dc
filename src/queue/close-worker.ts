import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'bullmq';
import type { Logger } from '../logging/logger.js';
import type { JobsInFlight } from './jobs-in-flight.js';
import type { RedisConnector } from './redis-connection.js';

/** How long BullMQ's close may take, once no job is in flight, to record the last outcomes. */
export const CLOSE_SETTLE_MS = 10_000;

export interface CloseWorkerOptions {
  readonly worker: Worker;
  readonly connector: RedisConnector;
  /** The jobs the worker is processing (the `inFlight` it was created with). */
  readonly inFlight: JobsInFlight;
  readonly logger: Logger;
  /** @defaultValue {@link CLOSE_SETTLE_MS} */
  readonly settleMs?: number;
}

/**
 * Closes the BullMQ worker, letting jobs in flight finish. The close is forced, dropping every Redis
 * connection, when it cannot end: while Redis is down (BullMQ would wait forever to record the jobs),
 * or when it goes on `settleMs` after the last job ended (after a cluster failover BullMQ can be left
 * waiting on a connection that never closes). The slices are in the warehouse either way; a job
 * whose end was not recorded is retaken as stalled, and its load changes nothing.
 */
export async function closeWorker(options: CloseWorkerOptions): Promise<void> {
  const { worker, connector, inFlight, logger, settleMs = CLOSE_SETTLE_MS } = options;
  const closing = worker.close();
  let idleSince: number | undefined;
  for (;;) {
    const finished = await Promise.race([closing.then(() => true), sleep(Math.min(500, settleMs)).then(() => false)]);
    if (finished) return;
    if (connector.down) {
      logger.warn({ redis: connector.location }, 'Redis is down: not waiting for it to record the jobs in flight');
      return abandon(worker, closing, connector);
    }
    idleSince = inFlight.count > 0 ? undefined : (idleSince ?? Date.now());
    if (idleSince !== undefined && Date.now() - idleSince >= settleMs) {
      logger.warn(
        { redis: connector.location, waitedMs: Date.now() - idleSince },
        "the worker's close went on after its last job ended: dropping the Redis connections (a job whose end was not recorded is retaken as stalled)",
      );
      return abandon(worker, closing, connector);
    }
  }
}

/**
 * BullMQ's own close would wait forever; dropping every connection leaves nothing to keep the
 * process alive. The errors its commands then end with are the drop's, said once above.
 */
function abandon(worker: Worker, closing: Promise<void>, connector: RedisConnector): void {
  worker.removeAllListeners('error');
  worker.on('error', () => undefined);
  closing.catch(() => undefined);
  connector.disconnectAll();
}
