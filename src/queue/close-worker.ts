import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'bullmq';
import type { Logger } from '../logging/logger.js';
import type { RedisConnector } from './redis-connection.js';

/**
 * Closes the BullMQ worker, letting the jobs in flight finish. BullMQ records each finished job
 * in Redis and says goodbye to it: while Redis is down both would wait for it forever, so then the
 * connections are dropped and the close forced. The slices of those jobs are in the warehouse
 * either way; their jobs count as stalled and are taken again (unchanged) once Redis is back.
 */
export async function closeWorker(worker: Worker, connector: RedisConnector, logger: Logger): Promise<void> {
  const closing = worker.close();
  for (;;) {
    const finished = await Promise.race([closing.then(() => true), sleep(500).then(() => false)]);
    if (finished) return;
    if (connector.down) {
      logger.warn({ redis: connector.location }, 'Redis is down: not waiting for it to record the jobs in flight');
      // BullMQ's own close would wait for Redis forever; dropping every connection abandons it
      // and leaves nothing behind to keep the process alive.
      closing.catch(() => undefined);
      connector.disconnectAll();
      return;
    }
  }
}
