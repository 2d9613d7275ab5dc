import { UsageError } from '../../src/errors/sync-error.js';
import { FIRST_REFILL_DELAY_MS } from '../../src/queue/refill-backfill.js';

/** A refill job's data: which plan, which of its steps, and how long the step before waited. */
export interface RefillBackfillData {
  readonly planId: string;
  readonly step: number;
  /** The wait before this step; the next one waits longer or shorter as the queue drains. */
  readonly delayMs: number;
}

/**
 * A refill job's data as read from Redis, checked: throws `USAGE_INVALID` naming the bad field
 * ("data is not …"), for the worker's log and the job's failed reason.
 */
export function parseRefillBackfillData(data: unknown): RefillBackfillData {
  const { planId, step, delayMs } = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const bad = (field: string, value: unknown, what: string) =>
    new UsageError(`data is not a valid backfill refill: ${field} ${JSON.stringify(value) ?? 'undefined'} is not ${what}`);
  if (typeof planId !== 'string' || !/^[0-9a-f]{16}$/.test(planId)) throw bad('planId', planId, 'a plan id of 16 hex digits');
  if (typeof step !== 'number' || !Number.isInteger(step) || step < 0) throw bad('step', step, 'a step number');
  if (delayMs !== undefined && (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0)) throw bad('delayMs', delayMs, 'a delay in milliseconds');
  return { planId, step, delayMs: delayMs ?? FIRST_REFILL_DELAY_MS };
}
