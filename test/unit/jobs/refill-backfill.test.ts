import { describe, expect, it } from 'vitest';
import { parseRefillBackfillData } from '../../../jobs/refill-backfill/data.js';
import { nextRefillDelayMs, REFILL_DELAY_BOUNDS_MS } from '../../../jobs/refill-backfill/handler.js';
import { REFILL_AGAIN_AFTER_MS, refillBackfillQueueAction } from '../../../jobs/refill-backfill/queue-outcome.js';
import { refusalOf } from '../../helpers/refusal.js';
import { FIRST_REFILL_DELAY_MS } from '../../../src/queue/refill-backfill.js';

const PLAN_ID = '0123456789abcdef';

/** The code and message `parseRefillBackfillData` throws for `data`. */
const refusal = (data: unknown) => refusalOf(parseRefillBackfillData, data);

describe('a refill job’s data', () => {
  it('is the plan id, the step and the wait before it; a job without the wait gets the first one', () => {
    expect(parseRefillBackfillData({ planId: PLAN_ID, step: 3, delayMs: 250 })).toEqual({ planId: PLAN_ID, step: 3, delayMs: 250 });
    expect(parseRefillBackfillData({ planId: PLAN_ID, step: 0 })).toEqual({ planId: PLAN_ID, step: 0, delayMs: FIRST_REFILL_DELAY_MS });
  });

  it('is refused field by field, naming what is wrong', () => {
    expect(refusal(null)).toEqual({ code: 'USAGE_INVALID', message: 'data is not a valid backfill refill: planId undefined is not a plan id of 16 hex digits' });
    expect(refusal({ planId: '../etc', step: 1 }).message).toContain('planId "../etc" is not a plan id');
    expect(refusal({ planId: PLAN_ID, step: -1 }).message).toContain('step -1 is not a step number');
    expect(refusal({ planId: PLAN_ID, step: 1.5 }).message).toContain('step 1.5 is not a step number');
    expect(refusal({ planId: PLAN_ID, step: 1, delayMs: 'soon' }).message).toContain('delayMs "soon" is not a delay');
  });
});

describe('the wait between a plan’s steps', () => {
  it('shortens while the workers take more than half the window between steps, down to its floor', () => {
    expect(nextRefillDelayMs(400, 10, 100)).toBe(200);
    expect(nextRefillDelayMs(REFILL_DELAY_BOUNDS_MS.min, 0, 100)).toBe(REFILL_DELAY_BOUNDS_MS.min);
  });

  it('lengthens while the queue stays nearly full, up to its ceiling', () => {
    expect(nextRefillDelayMs(400, 90, 100)).toBe(600);
    expect(nextRefillDelayMs(REFILL_DELAY_BOUNDS_MS.max, 100, 100)).toBe(REFILL_DELAY_BOUNDS_MS.max);
  });

  it('stays as it is when about half to three quarters of the window were left at the step', () => {
    expect(nextRefillDelayMs(400, 50, 100)).toBe(400);
    expect(nextRefillDelayMs(400, 75, 100)).toBe(400);
  });
});

describe('what the queue does with a refill step', () => {
  it('completes a step that scheduled the next one, finished the plan, or found itself stale', () => {
    expect(refillBackfillQueueAction({ kind: 'scheduled', handed: 10, nextDelayMs: 250 })).toEqual({ kind: 'complete', value: { handed: 10, nextDelayMs: 250 } });
    expect(refillBackfillQueueAction({ kind: 'stale' })).toEqual({ kind: 'complete', value: { stale: true } });
  });

  it('puts a step back, unspent, when it could not run now: the plan never ends for a passing trouble', () => {
    expect(refillBackfillQueueAction({ kind: 'busy' })).toEqual({ kind: 'put-back', delayMs: REFILL_AGAIN_AFTER_MS.busy });
    expect(refillBackfillQueueAction({ kind: 'trouble', error: new Error('connect ECONNREFUSED') })).toEqual({ kind: 'put-back', delayMs: REFILL_AGAIN_AFTER_MS.trouble });
    expect(refillBackfillQueueAction({ kind: 'interrupted' })).toEqual({ kind: 'put-back', delayMs: 0 });
  });
});
