import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startHttpServer } from '../helpers/http-server.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until } from '../helpers/until.js';
import { jobsAtOnce } from '../../src/queue/jobs-at-once.js';

/*
 * A gateway refusing fresh tokens (401 even after a renewal: EXPORT_UNAUTHORIZED) in queue mode.
 * Workers used to exit 2 on it: one misjudged 401 stopped the whole fleet at once, or, under
 * compose's restart policy, made a restart loop. Now they pause as for refused credentials: no
 * jobs taken (they stay queued, no attempt spent), not ready with the reason, and the fleet asks
 * the export endpoint again once per token.rejectedRetryMs, taking jobs again once it accepts.
 */

// January 2024: 2 portfolios × 2 report types × 31 days.
const JANUARY = ['--from', '2024-01-01', '--to', '2024-01-31'];
const SLICES = 2 * 2 * 31;
const WORKERS = 2;
/** The queue rig's concurrency per worker. */
const CONCURRENCY = 4;
const RETRY_MS = 3_000;

/**
 * The export endpoint of the test's own, in front of the simulator's: while `refusing`, it answers
 * every export 401 (the token comes from the simulator's identity provider, fresh); otherwise it
 * passes the request through. Counts the 401s it gave, with when.
 */
async function startRefusingGateway(upstream: string) {
  const refusals: number[] = [];
  let refusing = true;
  const server = await startHttpServer((req: IncomingMessage, res: ServerResponse) => {
    if (refusing) {
      refusals.push(Date.now());
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' });
      res.end('{"error":"unauthorized"}');
      return;
    }
    request(new URL(req.url ?? '/', upstream), {
      method: 'GET',
      headers: { authorization: String(req.headers.authorization ?? ''), 'x-client-id': String(req.headers['x-client-id'] ?? '') },
    })
      .then(async (answer) => {
        const body = Buffer.from(await answer.body.arrayBuffer());
        const headers: Record<string, string> = {};
        for (const name of ['content-type', 'content-disposition']) {
          const value = answer.headers[name];
          if (typeof value === 'string') headers[name] = value;
        }
        res.writeHead(answer.statusCode, { ...headers, 'content-length': body.length });
        res.end(body);
      })
      .catch(() => res.destroy());
  });
  return {
    ...server,
    refusals,
    accept(): void {
      refusing = false;
    },
  };
}

describe('a refused token in queue mode', () => {
  let rig: QueueRig | undefined;
  let gateway: Awaited<ReturnType<typeof startRefusingGateway>> | undefined;
  afterEach(async () => {
    await rig?.close();
    await gateway?.close();
    rig = gateway = undefined;
  });

  it('pauses the workers (not ready, saying why) without exiting, probes at the shared pace, and loads every queued slice once the gateway accepts, no attempt spent', async () => {
    rig = await startQueueRig({ settings: { token: { rejectedRetryMs: RETRY_MS } } });
    gateway = await startRefusingGateway(rig.simulator.url);
    rig.env.REPORT_BASE_URL = gateway.url;
    const workers = Array.from({ length: WORKERS }, () => rig!.startWorker());
    await Promise.all(workers.map((worker) => rig!.ready(worker)));
    expect((await rig.cli(['backfill', ...JANUARY])).code).toBe(0);

    const said = 'the export endpoint refused a freshly issued token: this worker takes no jobs';
    await until(() => workers.every((worker) => worker.output().includes(said)), 20_000, 'both workers to pause');
    for (const worker of workers) {
      const ready = await fetch(`${rig.metricsUrl(worker)}/readyz`);
      expect(ready.status).toBe(503);
      const text = await ready.text();
      expect(text).toContain('credentials: the export endpoint refused a freshly issued token');
      expect(text).toContain('check REPORT_TENANT_ID');
    }

    // Paused (the jobs in flight have had their answers): three paces later, every worker is still
    // running, and the fleet asked about once per pace.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const pausedAt = Date.now();
    const refusedBefore = gateway.refusals.length;
    await new Promise((resolve) => setTimeout(resolve, 3 * RETRY_MS + 1_000));
    for (const worker of workers) expect(worker.child.exitCode, worker.output()).toBeNull();
    const probes = gateway.refusals.filter((at) => at >= pausedAt).length;
    const paces = (since: number) => Math.ceil((Date.now() - since) / RETRY_MS) + 1;
    // A probe is one export request, two when its 401 may renew the token.
    expect(probes).toBeGreaterThanOrEqual(1);
    expect(probes).toBeLessThanOrEqual(2 * paces(pausedAt));
    // Nowhere near one request per queued slice: two for each job its worker had taken when it paused
    // (those waiting for a download slot then ask too), and the probes.
    expect(gateway.refusals.length).toBeLessThanOrEqual(WORKERS * jobsAtOnce({ concurrency: CONCURRENCY }) * 2 + 2 * paces(gateway.refusals[0]!));
    const counts = await rig.queueCounts();
    expect(counts.failed).toBe(0);
    expect(counts.completed).toBe(0);
    // Said once per worker, not once per job.
    for (const worker of workers) expect(worker.output().split(said).length - 1).toBe(1);

    const pausedForSeconds = (Date.now() - pausedAt) / 1000;
    gateway.accept();
    await until(
      async () => {
        const loaded = await countWarehouse((await rig!.warehouse()).db);
        return loaded.ledger === SLICES && loaded.notDone === 0;
      },
      45_000,
      'every slice to load once the gateway accepts',
    );
    const warehouse = await countWarehouse((await rig.warehouse()).db);
    // The jobs put back were not charged an attempt.
    expect(warehouse.retried).toBe(0);
    expect(warehouse.index).toBeGreaterThan(0);
    const after = await rig.queueCounts();
    expect(after.failed).toBe(0);
    // A worker that did not probe learns of the acceptance at its next look, which may come after
    // the other worker has loaded every slice.
    const resumed = /accepts the token again.*: taking jobs again/;
    await until(() => workers.every((worker) => resumed.test(worker.output())), 15_000, 'every worker to take jobs again');
    for (const worker of workers) {
      expect(worker.child.exitCode).toBeNull();
      expect((await fetch(`${rig.metricsUrl(worker)}/readyz`)).status).toBe(200);
    }
    console.info(`refused token, 2 workers: ${refusedBefore} 401s until both paused, ${probes} while paused for ${pausedForSeconds.toFixed(0)} s (pace ${RETRY_MS / 1000} s)`);
  }, 120_000);
});
