import { afterEach, describe, expect, it } from 'vitest';
import { startPrivatePostgres } from '../helpers/private-postgres.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until } from '../helpers/until.js';

/*
 * What Prometheus and an orchestrator see of a worker: /metrics with the counts of what its slices
 * did, /healthz, and /readyz naming what is down (Redis, the warehouse) and recovering after.
 */

function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('a worker’s metrics and health checks', () => {
  let rig: QueueRig | undefined;
  let redis: PrivateRedis | undefined;
  let postgres: Awaited<ReturnType<typeof startPrivatePostgres>> | undefined;
  afterEach(async () => {
    await rig?.close();
    await redis?.destroy();
    await postgres?.destroy();
    rig = redis = postgres = undefined;
  });

  it('exposes what the slices of a backfill did, per outcome, report type, code and status class', async () => {
    rig = await startQueueRig();
    rig.simulator.script(1001, 'index', '2024-01-02', [{ status: 500 }]);
    rig.simulator.script(1002, 'index', '2024-01-03', [{ status: 404 }]);
    const worker = rig.startWorker();
    await rig.ready(worker);
    const base = rig.metricsUrl(worker);
    expect(await (await fetch(`${base}/healthz`)).text()).toMatch(/^ok\nport: \d+\npid: \d+\n$/);
    const result = await rig.cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-14', '--wait']);
    expect(result.code).toBe(1);

    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    // 10 weekdays × 2 portfolios × 2 report types, less the one 404; the 4 weekend days are no data.
    expect(sample(text, 'report_sync_slices_total{outcome="loaded",report_type="index"}')).toBe(19);
    expect(sample(text, 'report_sync_slices_total{outcome="loaded",report_type="constituent.close"}')).toBe(20);
    expect(sample(text, 'report_sync_slices_total{outcome="no_data",report_type="index"}')).toBe(8);
    expect(sample(text, 'report_sync_slices_total{outcome="failed",report_type="index"}')).toBe(1);
    expect(sample(text, 'report_sync_slice_failures_total{code="EXPORT_NOT_FOUND"}')).toBe(1);
    expect(sample(text, 'report_sync_slice_retries_total{code="EXPORT_SERVER_ERROR"}')).toBe(1);
    expect(sample(text, 'report_sync_rows_loaded_total{report_type="index"}')).toBe(19 * 3);
    expect(sample(text, 'report_sync_rows_loaded_total{report_type="constituent.close"}')).toBe(20 * 25);
    expect(sample(text, 'report_sync_export_request_duration_seconds_count{status_class="5xx"}')).toBe(1);
    expect(sample(text, 'report_sync_export_request_duration_seconds_count{status_class="4xx"}')).toBe(1);
    expect(sample(text, 'report_sync_export_request_duration_seconds_count{status_class="2xx"}')).toBe(55);
    expect(sample(text, 'report_sync_token_requests_total{result="issued"}')).toBe(1);
    expect(sample(text, 'report_sync_queue_jobs{state="failed"}')).toBe(1);
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('report_sync_last_successful_night_timestamp_seconds');

    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe('ready\nredis: ok\nwarehouse: ok\ncredentials: ok\n');
  }, 60_000);

  it('/readyz fails while Redis is stopped, naming it, and recovers after', async () => {
    redis = await startPrivateRedis();
    rig = await startQueueRig();
    rig.env.REDIS_URL = redis.url;
    const worker = rig.startWorker();
    await rig.ready(worker);
    const base = rig.metricsUrl(worker);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    await redis.crash();
    await until(async () => (await fetch(`${base}/readyz`)).status === 503, 10_000, '/readyz to fail');
    const down = await (await fetch(`${base}/readyz`)).text();
    expect(down).toContain('not ready\n');
    expect(down).toContain(`redis: Redis at ${redis.url} is unreachable`);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await redis.start();
    await until(async () => (await fetch(`${base}/readyz`)).status === 200, 15_000, '/readyz to recover');
  }, 60_000);

  it('/metrics, /healthz and /readyz answer within 2 s while Redis is stopped, process metrics included, the queue gauge left out', async () => {
    redis = await startPrivateRedis();
    rig = await startQueueRig();
    rig.env.REDIS_URL = redis.url;
    const worker = rig.startWorker();
    await rig.ready(worker);
    const base = rig.metricsUrl(worker);
    const before = await (await fetch(`${base}/metrics`)).text();
    expect(before).toMatch(/^report_sync_queue_jobs\{state="waiting"\} /m);
    // The readiness checks show in /metrics too, for the shipped alert rules.
    expect(before).toMatch(/^report_sync_ready\{check="redis"\} 1$/m);
    await redis.crash();
    await until(async () => (await fetch(`${base}/readyz`)).status === 503, 10_000, '/readyz to fail');
    // Every path, a few scrapes each: none waits on Redis past its bound (they used to hang on it).
    const took: Record<string, number> = {};
    for (let round = 0; round < 3; round += 1) {
      for (const path of ['/metrics', '/healthz', '/readyz']) {
        const startedAt = Date.now();
        const response = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(10_000) });
        const text = await response.text();
        took[path] = Math.max(took[path] ?? 0, Date.now() - startedAt);
        expect(Date.now() - startedAt, path).toBeLessThan(2_000);
        if (path === '/metrics') {
          expect(response.status).toBe(200);
          expect(text).toContain('process_cpu_user_seconds_total');
          expect(text).toContain('report_sync_slices_total');
          expect(text).not.toMatch(/^report_sync_queue_jobs\{/m);
          expect(text).toMatch(/^report_sync_ready\{check="redis"\} 0$/m);
          expect(text).toMatch(/^report_sync_ready\{check="warehouse"\} 1$/m);
        }
        if (path === '/readyz') expect(text).toContain(`redis: Redis at ${redis.url} is unreachable`);
      }
    }
    await redis.start();
    await until(async () => /^report_sync_queue_jobs\{state="waiting"\} /m.test(await (await fetch(`${base}/metrics`)).text()), 20_000, 'the queue gauge to come back');
    await until(async () => /^report_sync_ready\{check="redis"\} 1$/m.test(await (await fetch(`${base}/metrics`)).text()), 20_000, 'report_sync_ready to pass again');
    console.info(
      `while Redis was stopped, longest answers: ${Object.entries(took)
        .map(([path, ms]) => `${path} ${ms} ms`)
        .join(', ')}`,
    );
  }, 60_000);

  it('/readyz fails while the Postgres warehouse is stopped, naming it, and recovers after', async () => {
    postgres = await startPrivatePostgres();
    rig = await startQueueRig();
    rig.env.DATABASE_URL = await postgres.createDatabase('report_sync_readyz');
    const worker = rig.startWorker();
    await rig.ready(worker);
    const base = rig.metricsUrl(worker);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    await postgres.stop();
    await until(async () => (await fetch(`${base}/readyz`)).status === 503, 15_000, '/readyz to fail');
    expect(await (await fetch(`${base}/readyz`)).text()).toMatch(/warehouse: warehouse unavailable while reading postgres:/);
    await postgres.start();
    await until(async () => (await fetch(`${base}/readyz`)).status === 200, 20_000, '/readyz to recover');
  }, 90_000);
});
