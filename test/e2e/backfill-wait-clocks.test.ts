import { afterEach, describe, expect, it } from 'vitest';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';

/*
 * `backfill --wait` decides which outcomes are its own by the warehouse's clock, which stamps every
 * ledger row: a worker on a machine whose clock is behind still counts. (The worker's Date is set
 * 30 s back by a preload; its timers, BullMQ's and Redis's are unaffected, as on a drifted host.)
 */

const PRELOAD = new URL('../helpers/clock-offset-preload.mjs', import.meta.url).pathname;

describe('backfill --wait beside a worker whose clock is behind', () => {
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('counts every outcome the worker wrote, and exits 0', async () => {
    rig = await startQueueRig();
    expect((await rig.cli(['migrate'])).code).toBe(0);
    const worker = rig.startWorker([], { NODE_OPTIONS: `--import ${PRELOAD}`, REPORT_SYNC_TEST_CLOCK_OFFSET_MS: '-30000' });
    await rig.ready(worker);
    const result = await rig.cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-05', '--wait']);
    expect(result.code, `${result.stdout}\n${result.stderr}\n${worker.output()}`).toBe(0);
    expect(result.stdout).toMatch(/loaded\s+20/);
    expect(result.stdout).toMatch(/not attempted\s+0/);
    // The worker's own log lines carry its drifted time: the preload did take effect.
    const logged = /"time":(\d+)/.exec(worker.output());
    expect(Date.now() - Number(logged?.[1])).toBeGreaterThan(25_000);
  }, 90_000);
});
