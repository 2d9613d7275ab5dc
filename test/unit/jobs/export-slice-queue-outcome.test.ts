import { describe, expect, it } from 'vitest';
import type { ExportSliceResult } from '../../../jobs/export-slice/handler.js';
import { exportSliceQueueAction } from '../../../jobs/export-slice/queue-outcome.js';
import { SyncError, type SyncErrorCode } from '../../../src/errors/sync-error.js';
import type { SliceOutcome } from '../../../src/outcomes/slice-outcome.js';
import type { Slice } from '../../../src/slice/slice.js';

const SLICE: Slice = { portfolioId: 1001, reportType: 'index', reportDate: '2024-01-03' };
const LIMITS = { maxRetryAfterMs: 60_000, credentialsRetryMs: 600_000 };

const attempted = (outcome: SliceOutcome): ExportSliceResult => ({ kind: 'attempted', outcome });
const failed = (code: SyncErrorCode, final: boolean, retryAfterMs?: number): ExportSliceResult =>
  attempted({ status: 'failed', slice: SLICE, attempt: 1, durationMs: 1, final, error: new SyncError(code, `trouble ${code}`, { retryAfterMs }) });
const kindOf = (result: ExportSliceResult) => exportSliceQueueAction(result, LIMITS).kind;

describe('what the queue does with an export job', () => {
  it('completes a loaded slice, with its row count', () => {
    const loaded = attempted({
      status: 'loaded',
      slice: SLICE,
      attempt: 1,
      durationMs: 1,
      final: true,
      rowCount: 42,
      bytes: 100,
      format: 'json',
      fileName: null,
      unchanged: false,
      checkWarnings: [],
    });
    expect(exportSliceQueueAction(loaded, LIMITS)).toEqual({ kind: 'complete', value: { status: 'loaded', rows: 42 } });
  });

  it('completes a no_data slice with no rows', () => {
    const noData = attempted({ status: 'no_data', slice: SLICE, attempt: 1, durationMs: 1, final: true, unchanged: true });
    expect(exportSliceQueueAction(noData, LIMITS)).toEqual({ kind: 'complete', value: { status: 'no_data', rows: 0 } });
  });

  it('retries a retryable failure with attempts left (a 503), carrying the error for the backoff', () => {
    const action = exportSliceQueueAction(failed('EXPORT_SERVER_ERROR', false), LIMITS);
    expect(action).toMatchObject({ kind: 'retry', stopWorker: false, error: { code: 'EXPORT_SERVER_ERROR' } });
  });

  it('fails a final failure without retry, the reason led by its code', () => {
    expect(exportSliceQueueAction(failed('EXPORT_NOT_FOUND', true), LIMITS)).toEqual({ kind: 'fail', reason: 'EXPORT_NOT_FOUND: trouble EXPORT_NOT_FOUND', stopWorker: undefined });
    // Out of attempts, a retryable failure is final too.
    expect(kindOf(failed('EXPORT_SERVER_ERROR', true))).toBe('fail');
  });

  it('stops the worker on a final failure of its own configuration', () => {
    const action = exportSliceQueueAction(failed('CONFIG_INVALID', true), LIMITS);
    expect(action).toMatchObject({ kind: 'fail', stopWorker: { code: 'CONFIG_INVALID' } });
  });

  it('pauses the queue for a 429’s Retry-After, capped by retry.maxRetryAfterMs, instead of spending an attempt', () => {
    expect(exportSliceQueueAction(failed('EXPORT_RATE_LIMITED', false, 5_000), LIMITS)).toEqual({ kind: 'rate-limit', pauseMs: 5_000, slice: SLICE });
    expect(exportSliceQueueAction(failed('EXPORT_RATE_LIMITED', false, 3_600_000), LIMITS)).toMatchObject({ kind: 'rate-limit', pauseMs: 60_000 });
    // Without a Retry-After, a 429 is an ordinary retry.
    expect(kindOf(failed('EXPORT_RATE_LIMITED', false))).toBe('retry');
  });

  it('puts the job back at once, unspent, when a shutdown cut the slice short', () => {
    expect(exportSliceQueueAction(failed('INTERRUPTED', false), LIMITS)).toEqual({ kind: 'put-back', delayMs: 0 });
    expect(kindOf(failed('INTERRUPTED', true))).toBe('put-back');
  });

  it.each(['AUTH_REJECTED', 'EXPORT_UNAUTHORIZED'] as const)('pauses the worker on credential trouble (%s) and puts the job back after token.rejectedRetryMs', (code) => {
    for (const final of [true, false]) {
      expect(exportSliceQueueAction(failed(code, final), LIMITS)).toMatchObject({ kind: 'pause-for-credentials', error: { code }, slice: SLICE, delayMs: 600_000 });
    }
  });

  it('fails for good, unattempted, a slice whose workers kept dying', () => {
    const died: ExportSliceResult = { kind: 'died', error: new SyncError('WORKER_DIED', 'the worker running this slice stopped without finishing it') };
    expect(exportSliceQueueAction(died, LIMITS)).toEqual({ kind: 'fail', reason: 'WORKER_DIED: the worker running this slice stopped without finishing it' });
  });
});
