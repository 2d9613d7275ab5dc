import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import type { GatewaySimulator } from '../../src/simulator/gateway-simulator.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until } from '../helpers/until.js';

/*
 * `concurrency` counts downloads: a worker takes `queue.prefetch` jobs more (as many again by
 * default), so a slice waiting for the warehouse does not keep the service idle. With concurrency 1
 * and the ledger's writes blocked by another session, a second slice is downloaded while the first
 * waits to be written, and no third: two jobs at once, one download at a time; with prefetch 0,
 * none while the first waits. Once the warehouse is free, every slice loads on its first attempt.
 */

const SETTINGS = { concurrency: 1, portfolios: [1001], reportTypes: ['index' as const] };
/** Monday to Friday: five slices with data. */
const WEEK = ['--from', '2024-01-01', '--to', '2024-01-05'];

/** The export requests seen stay at `count` for a while: nothing else was asked for. */
async function staysAt(simulator: GatewaySimulator, count: number): Promise<void> {
  await until(() => simulator.counters.exportRequests >= count, 30_000, `${count} export requests while the warehouse is blocked`);
  await new Promise((resolve) => setTimeout(resolve, 750));
  expect(simulator.counters.exportRequests).toBe(count);
}

describe('a worker downloads while the warehouse writes', () => {
  let queueRig: QueueRig | undefined;
  const releases: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const release of releases.splice(0)) await release();
    await queueRig?.close();
    queueRig = undefined;
  });

  /** Blocks the ledger, queues the week and expects `requests` export requests while it is blocked; then every slice loads at once. */
  async function downloadsWhileBlocked(settings: SettingsInput, expected: { readonly jobsAtOnce: number; readonly requests: number }): Promise<void> {
    queueRig = await startQueueRig({ settings: { ...SETTINGS, ...settings } });
    expect((await queueRig.cli(['migrate'])).code).toBe(0);
    const worker = queueRig.startWorker();
    await queueRig.ready(worker);
    expect(worker.output()).toContain(`"concurrency":1,"jobsAtOnce":${expected.jobsAtOnce}`);
    const holder = new pg.Client({ connectionString: queueRig.env.DATABASE_URL });
    await holder.connect();
    releases.push(() => holder.end());
    await holder.query('begin');
    await holder.query('lock table report_loads in exclusive mode');
    expect((await queueRig.cli(['backfill', ...WEEK])).code).toBe(0);
    await staysAt(queueRig.simulator, expected.requests);
    await holder.query('commit');
    const db = (await queueRig.warehouse()).db;
    await until(async () => (await sql<{ n: number }>`select count(*)::int as n from report_loads`.execute(db)).rows[0]!.n === 5, 30_000, 'every slice to load');
    const { rows } = await sql<{ status: string; attempts: number }>`select status, attempts from report_loads`.execute(db);
    expect(rows).toEqual(Array.from({ length: 5 }, () => ({ status: 'loaded', attempts: 1 })));
    worker.child.kill('SIGTERM');
    expect(await worker.exited, worker.output()).toBe(0);
  }

  it('downloads a second slice while the first waits for the locked ledger, and no third', async () => {
    await downloadsWhileBlocked({}, { jobsAtOnce: 2, requests: 2 });
  }, 90_000);

  it('with queue.prefetch 0, takes no job ahead: nothing is downloaded while the first slice waits', async () => {
    await downloadsWhileBlocked({ queue: { prefetch: 0 } }, { jobsAtOnce: 1, requests: 1 });
  }, 90_000);
});
