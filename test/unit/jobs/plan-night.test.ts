import { describe, expect, it } from 'vitest';
import { nightlyPayloadOf, parsePlanNightData } from '../../../jobs/plan-night/data.js';
import { handlePlanNight, type PlanNightHandlerDeps } from '../../../jobs/plan-night/handler.js';
import { planNightQueueAction } from '../../../jobs/plan-night/queue-outcome.js';
import { refusalOf } from '../../helpers/refusal.js';
import { createLogger } from '../../../src/logging/logger.js';
import type { NightInProgress } from '../../../src/queue/follow-night.js';
import type { NightlyPlanSettings } from '../../../src/queue/nightly-schedule.js';

const NIGHTLY: NightlyPlanSettings = { cron: '0 6 * * *', timeZone: 'Europe/Berlin', portfolios: [1001, 1002], reportTypes: ['index'], lookbackDays: 7 };
const NIGHT: NightInProgress = {
  reportDate: '2024-01-03',
  range: { from: '2023-12-27', to: '2024-01-03', portfolios: [1001, 1002], reportTypes: ['index'] },
  since: '2024-01-04T05:00:00.000Z',
  expected: 16,
};

/** The code and message `parsePlanNightData` throws for `data`. */
const refusal = (data: unknown) => refusalOf(parsePlanNightData, data);

describe('the nightly payload', () => {
  it('is what a night is planned with: portfolios, report types, zone and lookback, no cron', () => {
    expect(nightlyPayloadOf(NIGHTLY)).toEqual({ portfolios: [1001, 1002], reportTypes: ['index'], timeZone: 'Europe/Berlin', lookbackDays: 7 });
    const now = new Date('2024-01-04T05:00:00Z');
    expect(nightlyPayloadOf(NIGHTLY, now)).toMatchObject({ now });
  });
});

describe('a nightly fan-out job’s data', () => {
  it('carries the settings the schedule was registered with', () => {
    expect(parsePlanNightData({ nightly: NIGHTLY })).toEqual({ nightly: NIGHTLY, night: undefined });
  });

  it('carries no settings when they are missing or break the settings rules (the worker plans with its own)', () => {
    expect(parsePlanNightData({})).toEqual({ nightly: undefined, night: undefined });
    expect(parsePlanNightData(null)).toEqual({ nightly: undefined, night: undefined });
    expect(parsePlanNightData({ nightly: { ...NIGHTLY, portfolios: ['1001; DROP'] } }).nightly).toBeUndefined();
    expect(parsePlanNightData({ nightly: { ...NIGHTLY, timeZone: 'Mars/Olympus' } }).nightly).toBeUndefined();
  });

  it('carries the night already fanned out, to be followed on', () => {
    expect(parsePlanNightData({ nightly: NIGHTLY, night: NIGHT })).toEqual({ nightly: NIGHTLY, night: NIGHT });
  });

  it.each([
    ['not an object', 7, /night is not an object/],
    ['a reportDate not a date', { ...NIGHT, reportDate: 'yesterday' }, /night\.reportDate "yesterday" is not a date/],
    ['a since not a time', { ...NIGHT, since: 'then' }, /night\.since "then" is not an ISO time/],
    ['a negative expected', { ...NIGHT, expected: -1 }, /night\.expected -1 is not a count of slices/],
    ['no range', { ...NIGHT, range: undefined }, /night\.range undefined is not a slice range/],
    ['a range.to not a date', { ...NIGHT, range: { ...NIGHT.range, to: 3 } }, /night\.range\.to 3 is not a date/],
    ['a range.portfolios of strings', { ...NIGHT, range: { ...NIGHT.range, portfolios: ['x'] } }, /night\.range\.portfolios \["x"\] is not a list of portfolio ids/],
    ['an unknown range.reportTypes', { ...NIGHT, range: { ...NIGHT.range, reportTypes: ['nope'] } }, /night\.range\.reportTypes \["nope"\] is not a list of report types/],
  ])('refuses a night in progress with %s, naming the field', (_case, night, message) => {
    const { code, message: text } = refusal({ nightly: NIGHTLY, night });
    expect(code).toBe('USAGE_INVALID');
    expect(text).toMatch(/^data is not a valid night in progress: /);
    expect(text).toMatch(message);
  });
});

describe('the nightly fan-out’s handler, for a night already fanned out', () => {
  const deps = (followed: PlanNightHandlerDeps['followNight']): PlanNightHandlerDeps => ({
    ledger: undefined as never,
    exportQueue: undefined as never,
    priority: 1,
    warehouseNow: () => Promise.reject(new Error('a night fanned out is not planned again')),
    ownNightly: NIGHTLY,
    followNight: followed,
    logger: createLogger({ level: 'silent' }),
  });
  const context = { jobId: 'repeat:nightly:1', attempt: { number: 1, isLast: true }, stalls: 0, earlierStarts: 0, keepWithJob: async () => undefined };

  it('only follows it on, and tells how the following ended', async () => {
    const followedNights: NightInProgress[] = [];
    const result = await handlePlanNight(
      { nightly: NIGHTLY, night: NIGHT },
      context,
      deps(async (night) => (followedNights.push(night), 'told')),
    );
    expect(result).toEqual({ night: NIGHT, followed: 'told' });
    expect(followedNights).toEqual([NIGHT]);
  });

  it('is done once queued when nothing follows nights', async () => {
    expect(await handlePlanNight({ nightly: NIGHTLY, night: NIGHT }, context, deps(undefined))).toEqual({ night: NIGHT, followed: 'not-followed' });
  });
});

describe('what the queue does with a nightly fan-out', () => {
  it('completes a night told or not followed, with the slices it expected', () => {
    expect(planNightQueueAction({ night: NIGHT, followed: 'told' })).toEqual({ kind: 'complete', value: { expected: 16 } });
    expect(planNightQueueAction({ night: NIGHT, followed: 'not-followed' })).toEqual({ kind: 'complete', value: { expected: 16 } });
  });

  it('puts the night back, unspent, when a shutdown interrupted its following, for another worker to follow on', () => {
    expect(planNightQueueAction({ night: NIGHT, followed: 'interrupted' })).toEqual({ kind: 'put-back', delayMs: 1_000 });
  });
});
