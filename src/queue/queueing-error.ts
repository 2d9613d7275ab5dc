import { SyncError, toSyncError } from '../errors/sync-error.js';
import type { AddedSlices } from './export-queue.js';
import { countOf } from '../text/count-of.js';

/**
 * Redis refused a batch part-way through queueing: what was queued before stays queued (`added`),
 * and the message says how many and what to do. A full Redis (`maxmemory`, "OOM command not
 * allowed") is `REDIS_FULL`; anything else keeps the code of what went wrong.
 */
export class QueueingError extends SyncError {
  readonly added: AddedSlices;

  constructor(cause: unknown, added: AddedSlices) {
    const handed = added.queued + added.requeued;
    const sofar = `${countOf(handed, 'slice')} ${handed === 1 ? 'was' : 'were'} queued before it (${added.queued} new, ${added.requeued} again) and go on in the workers`;
    const text = cause instanceof Error ? cause.message : String(cause);
    if (/^OOM\b/.test(text)) {
      super(
        'REDIS_FULL',
        `Redis refused to store more jobs: it reached its maxmemory (${text.split('.')[0]}); ${sofar}. ` +
          'Give Redis more memory (maxmemory, with the noeviction policy BullMQ needs) or queue a shorter range, ' +
          'then run the same command again: slices already queued are not queued twice',
        { cause },
      );
    } else {
      const error = toSyncError(cause);
      super(error.code, `queueing stopped: ${error.message}; ${sofar}. Run the same command again once Redis answers: slices already queued are not queued twice`, { cause });
    }
    this.added = added;
  }
}
