import { afterEach, describe, expect, it } from 'vitest';
import { countSlices } from '../../src/slice/slice-range.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';

/*
 * An identity provider whose tokens live 2 or 3 s (its expires_in), in front of a gateway that
 * refuses a token from the moment that lifetime has run out. Each token was used as if it lived
 * 10 s (token.minLifetimeSeconds), met 401s, and the second 401 within a minute was called a
 * configuration error: `run` stopped with exit 2 after a few seconds, and every queue worker exited.
 * Each run here lasts at least four lifetimes: a 401 now and then is an expiry racing a request,
 * never more than a handful, and the provider is asked about once per lifetime, however many
 * processes share the token.
 */

/** Portfolios × days of index reports: the slices of each run. */
const PORTFOLIOS = Array.from({ length: 10 }, (_, i) => 3001 + i);
/** 50 days: 500 slices with the ten portfolios. */
const RUN_RANGE = { from: '2024-01-01', to: '2024-02-19' };
/** 36 days: 360 slices with the ten portfolios. */
const BACKFILL_RANGE = { from: '2024-01-01', to: '2024-02-05' };
/** Export 401s allowed per run: an expiry racing a request in flight, now and then. */
const MAX_UNAUTHORIZED = 5;

/** Settings of every run here, over the suite's quick ones; the token settings are the defaults. */
const SETTINGS = { portfolios: PORTFOLIOS, reportTypes: ['index' as const] };

/** The end of a process's output, for a failure message. */
const tail = (text: string) => text.slice(-4_000);

describe.each([2, 3])('tokens living %i s', (lifetimeSeconds) => {
  let rig: SyncRig | undefined;
  let queueRig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    await queueRig?.close();
    rig = queueRig = undefined;
  });

  it('run: 500 slices over at least four lifetimes all load, with a handful of 401s at most and a token per lifetime', async () => {
    const slices = countSlices({ ...RUN_RANGE, portfolios: PORTFOLIOS, reportTypes: ['index'] });
    expect(slices).toBe(500);
    // Four jobs at a time, each answer held back: 125 rounds, long enough for four lifetimes and more.
    rig = await startSyncRig({ simulator: { tokenLifetimeSeconds: lifetimeSeconds, latencyMs: 40 * lifetimeSeconds }, settings: SETTINGS });
    const startedAt = Date.now();
    const run = startCliProcess(['run', '--from', RUN_RANGE.from, '--to', RUN_RANGE.to], { cwd: rig.dir, env: rig.env });
    const code = await run.exited;
    const seconds = (Date.now() - startedAt) / 1000;
    const { tokenRequests, byStatus } = rig.simulator.counters;
    const unauthorized = byStatus[401] ?? 0;
    console.info(`${lifetimeSeconds} s tokens, run of ${slices} slices: exit ${code} after ${seconds.toFixed(1)} s, ${tokenRequests} token requests, ${unauthorized} export 401s`);
    expect(code, tail(run.output())).toBe(0);
    const counts = await countWarehouse((await rig.warehouse()).db);
    expect(counts.ledger).toBe(slices);
    expect(counts.notDone).toBe(0);
    expect(seconds).toBeGreaterThanOrEqual(4 * lifetimeSeconds);
    expect(unauthorized).toBeLessThanOrEqual(MAX_UNAUTHORIZED);
    expect(tokenRequests).toBeLessThanOrEqual(seconds / lifetimeSeconds + 1);
    expect(run.output()).not.toContain('EXPORT_UNAUTHORIZED');
  }, 60_000);

  it('backfill: three worker processes load 360 slices over at least four lifetimes, stay up, and the fleet asks about once per lifetime', async () => {
    const slices = countSlices({ ...BACKFILL_RANGE, portfolios: PORTFOLIOS, reportTypes: ['index'] });
    expect(slices).toBe(360);
    // Twelve jobs at a time across the fleet, each answer held back: 30 rounds, long enough for four lifetimes and more.
    queueRig = await startQueueRig({ simulator: { tokenLifetimeSeconds: lifetimeSeconds, latencyMs: 170 * lifetimeSeconds }, settings: SETTINGS });
    const migrated = await queueRig.cli(['migrate']);
    expect(migrated.code, migrated.stderr).toBe(0);
    const workers = [queueRig.startWorker(), queueRig.startWorker(), queueRig.startWorker()];
    for (const worker of workers) await queueRig.ready(worker, 30_000);
    queueRig.simulator.resetCounters();
    const startedAt = Date.now();
    const backfill = startCliProcess(['backfill', '--from', BACKFILL_RANGE.from, '--to', BACKFILL_RANGE.to, '--wait'], { cwd: queueRig.dir, env: queueRig.env });
    // Workers that all exited leave `--wait` waiting on a queue nobody serves: stop it then.
    const allExited = Promise.all(workers.map((worker) => worker.exited)).then(() => {
      backfill.child.kill('SIGTERM');
      return 'every worker exited';
    });
    const code = await Promise.race([backfill.exited, allExited]);
    const seconds = (Date.now() - startedAt) / 1000;
    const { tokenRequests, byStatus } = queueRig.simulator.counters;
    const unauthorized = byStatus[401] ?? 0;
    const running = workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null).length;
    console.info(
      `${lifetimeSeconds} s tokens, backfill of ${slices} slices by 3 workers: exit ${code} after ${seconds.toFixed(1)} s, ${tokenRequests} token requests, ${unauthorized} export 401s, ${running} workers running`,
    );
    expect(code, `${tail(backfill.output())}\n${workers.map((worker) => tail(worker.output())).join('\n')}`).toBe(0);
    expect(running).toBe(3);
    const counts = await countWarehouse((await queueRig.warehouse()).db);
    expect(counts.ledger).toBe(slices);
    expect(counts.notDone).toBe(0);
    expect(seconds).toBeGreaterThanOrEqual(4 * lifetimeSeconds);
    expect(unauthorized).toBeLessThanOrEqual(MAX_UNAUTHORIZED);
    expect(tokenRequests).toBeLessThanOrEqual(seconds / lifetimeSeconds + 1);
    for (const worker of workers) expect(worker.output()).not.toContain('EXPORT_UNAUTHORIZED');
  }, 90_000);
});
