import type { QueueAction } from '../../src/queue/queue-job.js';
import type { RefillBackfillResult } from './handler.js';

/** How soon a step another process holds, or one that met trouble, is tried again. */
export const REFILL_AGAIN_AFTER_MS = { busy: 1_000, trouble: 5_000 } as const;

/**
 * What the queue does with a refill step: done once the next step is scheduled or the plan has
 * nothing left; put back, unspent, when it could not run now. A plan never ends because Redis or
 * the warehouse was away for a while.
 */
export function refillBackfillQueueAction(result: RefillBackfillResult): QueueAction {
  switch (result.kind) {
    case 'busy':
      return { kind: 'put-back', delayMs: REFILL_AGAIN_AFTER_MS.busy };
    case 'trouble':
      return { kind: 'put-back', delayMs: REFILL_AGAIN_AFTER_MS.trouble };
    case 'interrupted':
      return { kind: 'put-back', delayMs: 0 };
    case 'scheduled':
      return { kind: 'complete', value: { handed: result.handed, nextDelayMs: result.nextDelayMs } };
    case 'finished':
      return { kind: 'complete', value: { finished: true, handed: result.plan.handed } };
    case 'stale':
      return { kind: 'complete', value: { stale: true } };
  }
}
