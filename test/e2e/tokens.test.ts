import { afterEach, describe, expect, it } from 'vitest';
import { attemptExportSlice } from '../../jobs/export-slice/handler.js';
import { loadConfig } from '../../src/config/load-config.js';
import { resolveUpstreamConfig } from '../../src/config/upstream-config.js';
import { createLogger } from '../../src/logging/logger.js';
import { planSlices } from '../../src/slice/slice-range.js';
import { runInProcess } from '../../src/runner/in-process-runner.js';
import { createSyncServices } from '../../src/cli/sync-services.js';
import { CapturedStream } from '../helpers/captured-io.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';

describe('tokens against the simulator', () => {
  let rig: SyncRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('asks for about one token per lifetime during a longer run, not one per job', async () => {
    rig = await startSyncRig({ simulator: { tokenLifetimeSeconds: 1, latencyMs: 40 }, settings: { concurrency: 2 } });
    const startedAt = Date.now();
    const result = await rig.cli(['run', '--from', '2024-04-01', '--to', '2024-04-19']);
    const seconds = (Date.now() - startedAt) / 1000;
    expect(result.code).toBe(0);
    const { tokenRequests, exportRequests } = rig.simulator.counters;
    expect(exportRequests).toBe(76);
    expect(seconds).toBeGreaterThan(1.5);
    // A 1 s token is renewed every 0.9 s: at most one per 0.9 s of run time, plus the first.
    expect(tokenRequests).toBeLessThanOrEqual(Math.ceil(seconds / 0.9) + 1);
    // Each token lives 1 s, so the span the exports were asked over needs one per second of it at
    // least; measured from the requests, not the wall clock, which also holds the command's start-up.
    const times = rig.simulator.exportRequestTimes;
    const exportingSeconds = (times.at(-1)! - times[0]!) / 1000;
    expect(exportingSeconds).toBeGreaterThan(1.5);
    expect(tokenRequests).toBeGreaterThanOrEqual(Math.floor(exportingSeconds / 1.0));
    expect(tokenRequests).toBeLessThan(exportRequests / 4);
  });

  it('renews exactly once when 40 concurrent jobs hit a revoked token', async () => {
    rig = await startSyncRig({ simulator: { latencyMs: 20 } });
    const config = loadConfig({ cwd: rig.dir, env: rig.env, overrides: { concurrency: 40 } });
    const logs = new CapturedStream();
    const services = await createSyncServices({ config, upstream: resolveUpstreamConfig(config.env), logger: createLogger({ level: 'info', destination: logs }) });
    try {
      await services.tokens.getToken();
      expect(rig.simulator.counters.tokenRequests).toBe(1);
      rig.simulator.revokeTokens();
      // 20 weekdays × 2 portfolios = 40 slices of one report type, all in flight at once.
      const slices = [...planSlices({ from: '2024-04-01', to: '2024-04-26', portfolios: [1001, 1002], reportTypes: ['index'] })].filter(
        (slice) => ![6, 0].includes(new Date(`${slice.reportDate}T00:00:00Z`).getUTCDay()),
      );
      expect(slices).toHaveLength(40);
      const report = await runInProcess({
        slices,
        planned: slices.length,
        concurrency: 40,
        retry: config.settings.retry,
        attemptSlice: (slice, attempt) => attemptExportSlice(slice, attempt, services),
      });
      expect(report.loaded).toBe(40);
      expect(report.retries).toBe(0);
      expect(rig.simulator.counters.tokenRequests).toBe(2);
    } finally {
      await services.close();
    }
  });

  it('stops with exit 2 and the OAuth error named when the credentials are refused', async () => {
    rig = await startSyncRig();
    const result = await rig.cli(['run', '--from', '2024-04-01', '--to', '2024-04-05'], { REPORT_PASSWORD: 'wrong-password-123' });
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('invalid_grant');
    expect(result.stdout).toContain('check REPORT_USERNAME and REPORT_PASSWORD');
    expect(`${result.stdout}${result.stderr}${result.logs}`).not.toMatch(/\n\s+at /);
    expect(`${result.stdout}${result.stderr}${result.logs}`).not.toContain('wrong-password-123');
    expect(rig.simulator.counters.exportRequests).toBe(0);
  });
});
