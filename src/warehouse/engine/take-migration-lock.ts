import { setTimeout as sleep } from 'node:timers/promises';
import { SyncError } from '../../errors/sync-error.js';
import type { EngineMigrateOptions } from './warehouse-engine.js';

/** How often the lock is tried again while another process migrates, and how often the wait is said. */
const TRY_AGAIN_MS = 250;
const SAY_STILL_WAITING_MS = 30_000;

/**
 * Tries a server's migration lock (`tryLock`, which answers at once whether it took it) until it
 * is free, saying so while it waits. The lock is tried every quarter second rather than waited for
 * in the server, so a shutdown ends the wait at once (`INTERRUPTED`) and a long wait is said every
 * half minute; a migration over a big warehouse (rebuilding an index) may rightly take long, so
 * there is no limit.
 */
export async function takeMigrationLock(tryLock: () => Promise<boolean>, location: string, options: EngineMigrateOptions): Promise<void> {
  const { signal, logger } = options;
  if (await tryLock()) return;
  const waitedFrom = performance.now();
  const waitedMs = () => Math.round(performance.now() - waitedFrom);
  logger?.info({ warehouse: location }, 'another process is migrating the warehouse: waiting for it to finish');
  let saidAt = waitedFrom;
  for (;;) {
    try {
      await sleep(TRY_AGAIN_MS, undefined, { signal });
    } catch (error) {
      throw new SyncError('INTERRUPTED', `stopped while waiting for another process's migration of ${location} to finish (${waitedMs()} ms waited)`, { cause: error });
    }
    if (await tryLock()) break;
    if (performance.now() - saidAt >= SAY_STILL_WAITING_MS) {
      saidAt = performance.now();
      logger?.info({ warehouse: location, waitedMs: waitedMs() }, 'another process is still migrating the warehouse: waiting for it to finish');
    }
  }
  logger?.info({ warehouse: location, waitedMs: waitedMs() }, 'took the migration lock');
}
