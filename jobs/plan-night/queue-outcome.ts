import type { QueueAction } from '../../src/queue/queue-job.js';
import type { PlanNightResult } from './handler.js';

/** How soon a night put back on shutdown is offered again, to whichever worker is still up. */
const HAND_ON_AFTER_MS = 1_000;

/**
 * What the queue does with a nightly fan-out's result: done once told (or queued, when not
 * followed); put back, unspent, when a shutdown interrupted the following, for another worker to
 * follow the same night on (its data keeps the night, so nothing is fanned out twice).
 */
export function planNightQueueAction(result: PlanNightResult): QueueAction {
  if (result.followed === 'interrupted') return { kind: 'put-back', delayMs: HAND_ON_AFTER_MS };
  return { kind: 'complete', value: { expected: result.night.expected } };
}
