import { describe, expect, it } from 'vitest';
import { SyncError } from '../../../src/errors/sync-error.js';
import { SyncMetrics } from '../../../src/metrics/sync-metrics.js';
import type { SliceOutcome } from '../../../src/outcomes/slice-outcome.js';
import type { Slice } from '../../../src/slice/slice.js';

const slice: Slice = { portfolioId: 1001, reportType: 'index', reportDate: '2024-03-04' };
const closeSlice: Slice = { portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-03-04' };

function loaded(overrides: { slice?: Slice; rowCount?: number; bytes?: number; unchanged?: boolean } = {}): SliceOutcome {
  return {
    status: 'loaded',
    final: true,
    slice: overrides.slice ?? slice,
    attempt: 1,
    durationMs: 5,
    rowCount: overrides.rowCount ?? 3,
    bytes: overrides.bytes ?? 100,
    format: 'json',
    fileName: null,
    unchanged: overrides.unchanged ?? false,
    checkWarnings: [],
  };
}

function failed(code: 'EXPORT_FORBIDDEN' | 'EXPORT_SERVER_ERROR', final: boolean): SliceOutcome {
  return { status: 'failed', final, slice, attempt: 1, durationMs: 5, error: new SyncError(code, String(code === 'EXPORT_FORBIDDEN' ? 403 : 503)) };
}

/** The sample lines of one metric family (no HELP/TYPE), as exposed. */
async function samples(metrics: SyncMetrics, name: string): Promise<string[]> {
  const text = await metrics.metrics();
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe('SyncMetrics', () => {
  it('counts final slice outcomes once each: an unchanged load is unchanged, not loaded, and writes no rows', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    metrics.sliceFinished(loaded({ rowCount: 3, bytes: 100 }));
    metrics.sliceFinished(loaded({ rowCount: 4, bytes: 50 }));
    metrics.sliceFinished(loaded({ rowCount: 1000, bytes: 70, unchanged: true }));
    metrics.sliceFinished(loaded({ slice: closeSlice, rowCount: 12, bytes: 9 }));
    metrics.sliceFinished({ status: 'no_data', final: true, slice, attempt: 1, durationMs: 2, unchanged: true });
    metrics.sliceFinished(failed('EXPORT_FORBIDDEN', true));
    const text = await metrics.metrics();

    expect(text).toContain('report_sync_slices_total{outcome="loaded",report_type="index"} 2\n');
    expect(text).toContain('report_sync_slices_total{outcome="unchanged",report_type="index"} 1\n');
    expect(text).toContain('report_sync_slices_total{outcome="no_data",report_type="index"} 1\n');
    expect(text).toContain('report_sync_slices_total{outcome="failed",report_type="index"} 1\n');
    expect(text).toContain('report_sync_slices_total{outcome="loaded",report_type="constituent.close"} 1\n');
    expect(text).toContain('report_sync_rows_loaded_total{report_type="index"} 7\n');
    expect(text).toContain('report_sync_rows_loaded_total{report_type="constituent.close"} 12\n');
    // The unchanged file was still downloaded.
    expect(text).toContain('report_sync_downloaded_bytes_total{report_type="index"} 220\n');
    expect(text).toContain('report_sync_slice_failures_total{code="EXPORT_FORBIDDEN"} 1\n');
    expect(text).toMatch(/# HELP report_sync_slices_total \S.{20,}/);
  });

  it('ignores outcomes that are not final and counts retries by code instead', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    metrics.sliceFinished(failed('EXPORT_SERVER_ERROR', false));
    metrics.sliceRetried('EXPORT_SERVER_ERROR');
    metrics.sliceRetried('EXPORT_SERVER_ERROR');
    expect(await samples(metrics, 'report_sync_slices_total')).toSatisfy((lines: string[]) => lines.every((line) => line.endsWith(' 0')));
    expect(await samples(metrics, 'report_sync_slice_failures_total')).toEqual([]);
    expect(await samples(metrics, 'report_sync_slice_retries_total')).toEqual(['report_sync_slice_retries_total{code="EXPORT_SERVER_ERROR"} 2']);
  });

  it('puts export durations in buckets by status class, with error when no HTTP answer came', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    metrics.exportAnswered(200, 0.3);
    metrics.exportAnswered(204, 45);
    metrics.exportAnswered(403, 0.04);
    metrics.exportAnswered(503, 2);
    metrics.exportAnswered(undefined, 300);
    const text = await metrics.metrics();
    const bucket = (le: string, statusClass: string) => `report_sync_export_request_duration_seconds_bucket{le="${le}",status_class="${statusClass}"}`;

    expect(text).toContain(`${bucket('0.25', '2xx')} 0\n`);
    expect(text).toContain(`${bucket('0.5', '2xx')} 1\n`);
    expect(text).toContain(`${bucket('30', '2xx')} 1\n`);
    expect(text).toContain(`${bucket('60', '2xx')} 2\n`);
    expect(text).toContain(`${bucket('0.05', '4xx')} 1\n`);
    expect(text).toContain(`${bucket('1', '5xx')} 0\n`);
    expect(text).toContain(`${bucket('2.5', '5xx')} 1\n`);
    expect(text).toContain(`${bucket('120', 'error')} 0\n`);
    expect(text).toContain(`${bucket('300', 'error')} 1\n`);
    expect(text).toContain('report_sync_export_request_duration_seconds_count{status_class="2xx"} 2\n');
    expect(text).toContain('report_sync_export_request_duration_seconds_sum{status_class="2xx"} 45.3\n');
    expect(text).not.toContain('status_class="3xx"');
  });

  it('counts tokens, renewals, identity-provider waits, stalled jobs and alerts', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    metrics.tokenRequested('issued');
    metrics.tokenRequested('issued');
    metrics.tokenRequested('unavailable');
    metrics.tokenRenewed('rejection');
    metrics.identityProviderWaited();
    metrics.stalledJobTaken();
    metrics.stalledJobTaken();
    metrics.alertSent('failed');
    const text = await metrics.metrics();

    expect(text).toContain('report_sync_token_requests_total{result="issued"} 2\n');
    expect(text).toContain('report_sync_token_requests_total{result="unavailable"} 1\n');
    expect(text).toContain('report_sync_token_requests_total{result="rejected"} 0\n');
    expect(text).toContain('report_sync_token_renewals_total{reason="rejection"} 1\n');
    expect(text).toContain('report_sync_token_renewals_total{reason="expiry"} 0\n');
    expect(text).toContain('report_sync_identity_provider_waits_total 1\n');
    expect(text).toContain('report_sync_stalled_jobs_total 2\n');
    expect(text).toContain('report_sync_alerts_total{result="failed"} 1\n');
    expect(text).toContain('report_sync_alerts_total{result="delivered"} 0\n');
  });

  it('reads queue depths at scrape time, and shows none when there is no source or it throws', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    expect(await samples(metrics, 'report_sync_queue_jobs')).toEqual([]);

    let depths: Record<string, number> = { waiting: 3, active: 1, failed: 2 };
    metrics.setQueueDepthSource(async () => depths);
    expect(await samples(metrics, 'report_sync_queue_jobs')).toEqual([
      'report_sync_queue_jobs{state="waiting"} 3',
      'report_sync_queue_jobs{state="active"} 1',
      'report_sync_queue_jobs{state="failed"} 2',
    ]);

    // A state gone from the source is gone from the gauge, not left at its old value.
    depths = { waiting: 0 };
    expect(await samples(metrics, 'report_sync_queue_jobs')).toEqual(['report_sync_queue_jobs{state="waiting"} 0']);

    metrics.setQueueDepthSource(async () => {
      throw new Error('Redis at redis://localhost:6379 is unreachable (ECONNREFUSED)');
    });
    const text = await metrics.metrics();
    expect(text).toContain('# TYPE report_sync_queue_jobs gauge');
    expect(text).not.toMatch(/^report_sync_queue_jobs\{/m);
  });

  it('never waits for a source past sourceTimeoutMs: a late one leaves its gauge out, process metrics stay, and the next scrape waits on the same read', async () => {
    const answers: Array<() => void> = [];
    let reads = 0;
    let down = true;
    const metrics = new SyncMetrics({ sourceTimeoutMs: 200 });
    // As Redis commands do while Redis is down: no answer until it is back.
    metrics.setQueueDepthSource(() => {
      reads += 1;
      return down ? new Promise((resolve) => answers.push(() => resolve({ waiting: 7 }))) : Promise.resolve({ waiting: 7 });
    });
    metrics.setLastSuccessfulNightSource(() => new Promise((resolve) => answers.push(() => resolve(1_709_600_000))));
    metrics.nightSucceeded(new Date('2024-03-01T03:00:00Z'));
    for (let scrape = 0; scrape < 2; scrape += 1) {
      const startedAt = Date.now();
      const text = await metrics.metrics();
      expect(Date.now() - startedAt).toBeLessThan(1_000);
      expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
      expect(text).toContain('report_sync_slices_total{outcome="loaded",report_type="index"} 0\n');
      expect(text).not.toMatch(/^report_sync_queue_jobs\{/m);
      // What the process knows itself is still shown.
      expect(text).toContain('report_sync_last_successful_night_timestamp_seconds 1709262000\n');
    }
    expect(reads).toBe(1);
    // Once the source answers, the next scrape reads it afresh.
    down = false;
    for (const answer of answers.splice(0)) answer();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await samples(metrics, 'report_sync_queue_jobs')).toEqual(['report_sync_queue_jobs{state="waiting"} 7']);
    expect(reads).toBe(2);
  });

  it('shows the last successful night from the process or its source, never a 0 for "unknown"', async () => {
    const name = 'report_sync_last_successful_night_timestamp_seconds';
    const metrics = new SyncMetrics({ collectDefaults: false });
    expect(await samples(metrics, name)).toEqual([]);

    metrics.setLastSuccessfulNightSource(async () => undefined);
    expect(await samples(metrics, name)).toEqual([]);

    metrics.setLastSuccessfulNightSource(async () => 1_709_600_000);
    expect(await samples(metrics, name)).toEqual([`${name} 1709600000`]);

    metrics.nightSucceeded(new Date('2024-03-05T03:00:00Z'));
    expect(await samples(metrics, name)).toEqual([`${name} 1709607600`]);

    metrics.setLastSuccessfulNightSource(async () => {
      throw new Error('warehouse locked');
    });
    expect(await samples(metrics, name)).toEqual([`${name} 1709607600`]);

    metrics.setLastSuccessfulNightSource(async () => undefined);
    expect(await samples(metrics, name)).toEqual([`${name} 1709607600`]);
  });

  it('shows each readiness check as 1 or 0 at scrape time, and none when there is no source or it throws', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    expect(await samples(metrics, 'report_sync_ready')).toEqual([]);

    let checks: Record<string, boolean> = { redis: true, warehouse: true };
    metrics.setReadinessSource(async () => checks);
    expect(await samples(metrics, 'report_sync_ready')).toEqual(['report_sync_ready{check="redis"} 1', 'report_sync_ready{check="warehouse"} 1']);

    checks = { redis: false, warehouse: true };
    expect(await samples(metrics, 'report_sync_ready')).toEqual(['report_sync_ready{check="redis"} 0', 'report_sync_ready{check="warehouse"} 1']);

    metrics.setReadinessSource(async () => {
      throw new Error('check list broke');
    });
    const text = await metrics.metrics();
    expect(text).toContain('# TYPE report_sync_ready gauge');
    expect(text).not.toMatch(/^report_sync_ready\{/m);
  });

  it('sets the last successful night in-process without any source', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    metrics.nightSucceeded(new Date('2024-03-05T03:00:00.500Z'));
    expect(await samples(metrics, 'report_sync_last_successful_night_timestamp_seconds')).toEqual(['report_sync_last_successful_night_timestamp_seconds 1709607600.5']);
  });

  it('collects process metrics on its own registry by default, and not when asked not to', async () => {
    const withDefaults = new SyncMetrics();
    const without = new SyncMetrics({ collectDefaults: false });
    expect(await withDefaults.metrics()).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(await withDefaults.metrics()).toContain('nodejs_eventloop_lag_seconds');
    expect(await without.metrics()).not.toContain('process_cpu_user_seconds_total');
    expect(withDefaults.contentType).toBe(withDefaults.registry.contentType);
    expect(withDefaults.contentType).toMatch(/^text\/plain/);
  });

  it('keeps two instances apart', async () => {
    const first = new SyncMetrics();
    const second = new SyncMetrics();
    first.sliceFinished(loaded());
    first.stalledJobTaken();
    first.setQueueDepthSource(async () => ({ waiting: 5 }));

    expect(await first.metrics()).toContain('report_sync_slices_total{outcome="loaded",report_type="index"} 1\n');
    const text = await second.metrics();
    expect(text).toContain('report_sync_slices_total{outcome="loaded",report_type="index"} 0\n');
    expect(text).toContain('report_sync_stalled_jobs_total 0\n');
    expect(text).not.toMatch(/^report_sync_queue_jobs\{/m);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
  });
});

describe('SyncMetrics, slices loaded with warnings', () => {
  it('counts them as loaded, and again as loaded with warnings, with each warning by check; their rows are written rows', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    const warning = (check: string) => ({ check, measured: 0.4, threshold: 0.001, message: `${check}: off` });
    metrics.sliceFinished({ ...loaded({ slice: closeSlice, rowCount: 7 }), checkWarnings: [warning('weightsSum'), warning('rowCountDrop')] } as SliceOutcome);
    metrics.sliceFinished({ ...loaded({ slice: closeSlice, rowCount: 4 }), checkWarnings: [warning('weightsSum')] } as SliceOutcome);
    metrics.sliceFinished(loaded({ slice: closeSlice, rowCount: 5 }));
    const text = await metrics.metrics();
    expect(text).toContain('report_sync_slices_total{outcome="loaded",report_type="constituent.close"} 3\n');
    expect(text).toContain('report_sync_slices_loaded_with_warnings_total{report_type="constituent.close"} 2\n');
    expect(text).toContain('report_sync_slices_loaded_with_warnings_total{report_type="index"} 0\n');
    expect(text).toContain('report_sync_check_warnings_total{check="weightsSum"} 2\n');
    expect(text).toContain('report_sync_check_warnings_total{check="rowCountDrop"} 1\n');
    expect(text).toContain('report_sync_rows_loaded_total{report_type="constituent.close"} 16\n');
  });
});
