import { describe, expect, it } from 'vitest';
import type { BenchFacts, BenchResult } from './bench-result.js';
import { loadBenchmarks } from './run-benchmarks.js';

// A tiny run of every benchmark, so they never rot: the sizes are too small for the targets to mean
// anything, so the speed figures are only checked for sanity here. What each run left behind
// (its facts, counted afterwards from the warehouse, the ledger, the simulator and the queue) is
// checked in full: a benchmark that measured a run which lost or doubled work would be measuring
// something other than the product.
const benchmarks = await loadBenchmarks();

/** Facts of the row whose benchmark column is `name`. */
function factsOf(rows: readonly BenchResult[], name: string): BenchFacts {
  const row = rows.find((candidate) => candidate.benchmark === name);
  expect(row?.facts, `the row ${name} and its facts`).toBeDefined();
  return row!.facts!;
}

/** Every slice asked for is in the ledger once, `loaded`, with all the rows the simulator served for it, and nothing else is. */
function expectEverySliceLoadedOnce(facts: BenchFacts): void {
  const { slicesPlanned, rowsExpected } = facts;
  expect(slicesPlanned).toBeGreaterThan(0);
  expect(rowsExpected).toBeGreaterThan(0);
  expect({
    slicesRecorded: facts.slicesRecorded,
    slicesLoaded: facts.slicesLoaded,
    ledgerRowsPerSlice: facts.ledgerRowsPerSlice,
    ledgerRowsUnplanned: facts.ledgerRowsUnplanned,
    ledgerRowCount: facts.ledgerRowCount,
    rowsLoaded: facts.rowsLoaded,
  }).toEqual({
    slicesRecorded: slicesPlanned,
    slicesLoaded: slicesPlanned,
    ledgerRowsPerSlice: 1,
    ledgerRowsUnplanned: 0,
    ledgerRowCount: rowsExpected,
    rowsLoaded: rowsExpected,
  });
}

/** An in-process run against a simulator without faults: one export request per slice, every one answered 200, one token. */
function expectOneRequestPerSlice(facts: BenchFacts): void {
  expect({ exportRequests: facts.exportRequests, exportAnswered200: facts.exportAnswered200, tokenRequests: facts.tokenRequests, nonZeroExits: facts.nonZeroExits }).toEqual({
    exportRequests: facts.slicesPlanned,
    exportAnswered200: facts.slicesPlanned,
    tokenRequests: 1,
    nonZeroExits: 0,
  });
}

/** What each benchmark can vouch for, by its name. */
const INVARIANTS: Record<string, (rows: readonly BenchResult[]) => void> = {
  'small-slices': (rows) => {
    for (const name of ['small slices: run, in-process', 'small slices: run, in-process, MySQL']) {
      const inProcess = factsOf(rows, name);
      expectEverySliceLoadedOnce(inProcess);
      expectOneRequestPerSlice(inProcess);
      // Both baselines loaded the same slices into the same dialect, all their rows.
      expect(inProcess.baselineRows).toEqual({ raw: inProcess.rowsLoaded, guaranteed: inProcess.rowsLoaded });
    }
    for (const fleet of ['small slices: BullMQ, 1 worker', 'small slices: BullMQ, 2 workers', 'small slices: BullMQ on Postgres, 2 workers']) {
      const facts = factsOf(rows, fleet);
      expectEverySliceLoadedOnce(facts);
      // Two worker processes at most, sharing a token through Redis: never more than one each.
      expect(facts.tokenRequests).toBeGreaterThanOrEqual(1);
      expect(facts.tokenRequests).toBeLessThanOrEqual(2);
    }
    const mysqlWorker = factsOf(rows, 'small slices: BullMQ on MySQL, 1 worker');
    expectEverySliceLoadedOnce(mysqlWorker);
    // A fleet of one worker: one token.
    expect(mysqlWorker.tokenRequests).toBe(1);
  },
  'big-slice': (rows) => {
    for (const dialect of ['big slice → SQLite', 'big slice → Postgres', 'big slice → MySQL']) {
      const facts = factsOf(rows, dialect);
      expectEverySliceLoadedOnce(facts);
      expect(facts.slicesPlanned).toBe(1);
      expect(facts.baselineRows).toEqual({ raw: facts.rowsLoaded });
    }
  },
  'latency-bound': (rows) => {
    const facts = factsOf(rows, 'latency-bound: run, in-process');
    expectEverySliceLoadedOnce(facts);
    expectOneRequestPerSlice(facts);
    expect(facts.baselineRows).toEqual({ raw: facts.rowsLoaded });
  },
  'token-load': (rows) => {
    const facts = factsOf(rows, 'identity-provider load');
    expect(facts.tokenRequestsBound).toBeGreaterThanOrEqual(1);
    expect(facts.tokenRequests).toBeGreaterThanOrEqual(1);
    expect(facts.tokenRequests).toBeLessThanOrEqual(facts.tokenRequestsBound!);
    expect(facts.jobsQueued).toBeGreaterThan(0);
    expect(facts.exportRequests).toBeGreaterThan(0);
    expect({ export401s: facts.export401s, nonZeroExits: facts.nonZeroExits }).toEqual({ export401s: 0, nonZeroExits: 0 });
  },
  'plan-scale': (rows) => {
    // Worked off through the plan's window, with every job queued meanwhile and queued first: each slice attempted once.
    const worked = factsOf(rows, 'scale of the plan: backfill worked off');
    expect(worked.slicesPlanned).toBeGreaterThan(0);
    expect({
      jobsAttempted: worked.jobsAttempted,
      baselineJobsQueued: worked.baselineJobsQueued,
      queuedFirstJobsQueued: worked.queuedFirstJobsQueued,
      attemptsPerJob: worked.attemptsPerJob,
      nonZeroExits: worked.nonZeroExits,
    }).toEqual({
      jobsAttempted: worked.slicesPlanned,
      baselineJobsQueued: worked.slicesPlanned,
      queuedFirstJobsQueued: worked.slicesPlanned,
      attemptsPerJob: 1,
      nonZeroExits: 0,
    });
    const onlyMissing = factsOf(rows, 'scale of the plan: backfill --only-missing');
    expect(onlyMissing.slicesDone).toBeGreaterThan(0);
    expect(onlyMissing.slicesDone).toBeLessThan(onlyMissing.slicesPlanned!);
    // The first window of the missing slices (200 at smoke size), and the plan's next step when more are left.
    const missing = onlyMissing.slicesPlanned! - onlyMissing.slicesDone!;
    expect({ jobsQueued: onlyMissing.jobsQueued, nonZeroExits: onlyMissing.nonZeroExits }).toEqual({
      jobsQueued: missing > 200 ? 201 : missing,
      nonZeroExits: 0,
    });
  },
  fleet: (rows) => {
    for (const name of ['fleet: 4 workers × 16 → Postgres', 'fleet: 4 workers × 16, queue.rateLimit 200/s']) {
      const facts = factsOf(rows, name);
      // A backfill's range has weekends, which the simulator answers with no data: every slice is
      // recorded once, the weekdays' with all their rows, and each was asked for once.
      expect(facts.slicesLoaded).toBeGreaterThan(0);
      expect(facts.slicesLoaded).toBeLessThan(facts.slicesPlanned!);
      expect(facts.rowsExpected).toBeGreaterThan(0);
      expect(facts.tokenRequests).toBeGreaterThanOrEqual(1);
      expect(facts.tokenRequests).toBeLessThanOrEqual(4);
      expect({
        slicesRecorded: facts.slicesRecorded,
        ledgerRowsPerSlice: facts.ledgerRowsPerSlice,
        ledgerRowsUnplanned: facts.ledgerRowsUnplanned,
        ledgerRowCount: facts.ledgerRowCount,
        rowsLoaded: facts.rowsLoaded,
        exportRequests: facts.exportRequests,
        exportAnswered200: facts.exportAnswered200,
        nonZeroExits: facts.nonZeroExits,
      }).toEqual({
        slicesRecorded: facts.slicesPlanned,
        ledgerRowsPerSlice: 1,
        ledgerRowsUnplanned: 0,
        ledgerRowCount: facts.rowsExpected,
        rowsLoaded: facts.rowsExpected,
        exportRequests: facts.slicesPlanned,
        exportAnswered200: facts.slicesPlanned,
        nonZeroExits: 0,
      });
    }
  },
  'start-up': (rows) => {
    for (const row of rows) expect(row.facts?.nonZeroExits).toBe(0);
  },
  'warehouse-growth': (rows) => {
    for (const dialect of ['SQLite', 'Postgres', 'MySQL']) {
      const loads = factsOf(rows, `warehouse growth: load a slice, ${dialect}`);
      expectEverySliceLoadedOnce(loads);
      // The slices were loaded beside the seeded table, which they left as it was.
      expect(loads.reportRowsBeside).toBe(loads.reportRowsBesidePlanned);
      expect(loads.reportPortfoliosBeside).toBe(loads.reportPortfoliosBesidePlanned);
    }
  },
  'ledger-growth': (rows) => {
    for (const dialect of ['SQLite', 'Postgres', 'MySQL']) {
      const ledger = rows.find((row) => row.benchmark.startsWith('ledger of') && row.benchmark.endsWith(dialect))?.facts;
      expect(ledger, `the ledger row of ${dialect}`).toBeDefined();
      // check and the month view answered what the seed holds, from the monthly counts and the ledger.
      expect(ledger!.slicesByOutcome).toEqual(ledger!.slicesByOutcomeExpected);
      expect(ledger!.monthViewByOutcome).toEqual(ledger!.monthViewByOutcomeExpected);
      expect(ledger!.slicesRecorded).toBe(ledger!.slicesPlanned);
      expect(ledger!.nonZeroExits).toBe(0);
    }
  },
};

describe('benchmarks at smoke size', () => {
  it('finds the five benchmarks of the issue, the start-up one, the fleet and the two of a growing warehouse', () => {
    expect(benchmarks.map((bench) => bench.order)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('knows what every benchmark can vouch for', () => {
    expect(Object.keys(INVARIANTS).sort()).toEqual(benchmarks.map((bench) => bench.name).sort());
  });

  for (const bench of benchmarks) {
    it(`runs ${bench.name}, and its run did all the work and no more`, { timeout: 120_000 }, async () => {
      const rows = await bench.run('smoke');
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) {
        expect(row.product).toMatch(/\d/);
        if (row.ratio !== null) {
          expect(Number.isFinite(row.ratio)).toBe(true);
          expect(row.ratio).toBeGreaterThan(0);
        }
      }
      INVARIANTS[bench.name]!(rows);
    });
  }
});
