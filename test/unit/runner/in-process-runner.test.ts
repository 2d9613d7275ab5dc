import { describe, expect, it } from 'vitest';
import { AuthError, ExportError } from '../../../src/errors/sync-error.js';
import { planSlices } from '../../../src/slice/slice-range.js';
import { runInProcess } from '../../../src/runner/in-process-runner.js';
import { exitCodeOf } from '../../../src/runner/run-report.js';
import type { SliceAttempt, SliceOutcome } from '../../../src/outcomes/slice-outcome.js';
import type { Slice } from '../../../src/slice/slice.js';

const retry = { attempts: 3, baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 50 };
const slices = () => [...planSlices({ from: '2024-01-01', to: '2024-01-10', portfolios: [1, 2], reportTypes: ['index'] })];

function loaded(slice: Slice, attempt: SliceAttempt): SliceOutcome {
  return {
    status: 'loaded',
    final: true,
    slice,
    attempt: attempt.number,
    durationMs: 1,
    rowCount: 2,
    bytes: 10,
    format: 'json',
    fileName: null,
    unchanged: false,
    checkWarnings: [],
  };
}

describe('runInProcess', () => {
  it('runs every slice with at most `concurrency` in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const report = await runInProcess({
      slices: slices(),
      planned: 20,
      concurrency: 4,
      retry,
      attemptSlice: async (slice, attempt) => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight -= 1;
        return loaded(slice, attempt);
      },
    });
    expect(peak).toBe(4);
    expect(report).toMatchObject({ planned: 20, loaded: 20, failed: 0, notAttempted: 0, rowsWritten: { index_report: 40, constituent_report: 0 } });
    expect(exitCodeOf(report)).toBe(0);
  });

  it('retries non-final failures until an attempt succeeds, and tells the job which attempt is the last', async () => {
    const seen: SliceAttempt[] = [];
    const report = await runInProcess({
      slices: slices().slice(0, 1),
      planned: 1,
      concurrency: 1,
      retry,
      attemptSlice: async (slice, attempt) => {
        seen.push(attempt);
        if (attempt.number < 3) {
          return { status: 'failed', final: false, slice, attempt: attempt.number, durationMs: 1, error: new ExportError('EXPORT_SERVER_ERROR', '500') };
        }
        return loaded(slice, attempt);
      },
    });
    expect(seen).toEqual([
      { number: 1, isLast: false },
      { number: 2, isLast: false },
      { number: 3, isLast: true },
    ]);
    expect(report).toMatchObject({ loaded: 1, retries: 2 });
  });

  it('stops taking slices after a fatal error and exits 2', async () => {
    let calls = 0;
    const report = await runInProcess({
      slices: slices(),
      planned: 20,
      concurrency: 2,
      retry,
      attemptSlice: async (slice, attempt) => {
        calls += 1;
        await new Promise((resolve) => setTimeout(resolve, 2));
        return { status: 'failed', final: true, slice, attempt: attempt.number, durationMs: 1, error: new AuthError('AUTH_REJECTED', 'invalid_grant') };
      },
    });
    expect(calls).toBe(2);
    expect(report.failed).toBe(2);
    expect(report.notAttempted).toBe(18);
    expect(report.stoppedBy?.code).toBe('AUTH_REJECTED');
    expect(exitCodeOf(report)).toBe(2);
  });

  it('exits 1 when a slice failed', async () => {
    const report = await runInProcess({
      slices: slices().slice(0, 2),
      planned: 2,
      concurrency: 2,
      retry,
      attemptSlice: async (slice, attempt) =>
        slice.portfolioId === 1
          ? { status: 'failed', final: true, slice, attempt: attempt.number, durationMs: 1, error: new ExportError('EXPORT_NOT_FOUND', '404') }
          : loaded(slice, attempt),
    });
    expect(report.failures.total).toBe(1);
    expect(report.failures.groups).toEqual([
      { code: 'EXPORT_NOT_FOUND', portfolioId: 1, slices: 1, examples: [{ slice: expect.objectContaining({ portfolioId: 1 }), message: '404' }] },
    ]);
    expect(exitCodeOf(report)).toBe(1);
  });

  it('stops starting slices when aborted', async () => {
    const controller = new AbortController();
    let calls = 0;
    const report = await runInProcess({
      slices: slices(),
      planned: 20,
      concurrency: 1,
      retry,
      signal: controller.signal,
      attemptSlice: async (slice, attempt) => {
        calls += 1;
        if (calls === 3) controller.abort();
        return loaded(slice, attempt);
      },
    });
    expect(calls).toBe(3);
    expect(report.interrupted).toBe(true);
    expect(report.notAttempted).toBe(17);
  });
});
