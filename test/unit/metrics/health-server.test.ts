import { request } from 'node:http';
import { connect } from 'node:net';
import { Gauge } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../../../src/logging/logger.js';
import { startHealthServer, type HealthServer, type HealthServerOptions, type ReadinessCheck } from '../../../src/metrics/health-server.js';
import { SyncMetrics } from '../../../src/metrics/sync-metrics.js';

const quiet = createLogger({ level: 'silent' });
const servers: HealthServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(overrides: Partial<HealthServerOptions> = {}): Promise<HealthServer> {
  const server = await startHealthServer({
    host: '127.0.0.1',
    port: 0,
    metrics: new SyncMetrics({ collectDefaults: false }),
    readiness: [],
    logger: quiet,
    ...overrides,
  });
  servers.push(server);
  return server;
}

const ready = (name: string): ReadinessCheck => ({ name, check: async () => undefined });

/** A check that answers only when released; `release()` answers every call made so far (each probe calls it once). */
function hangingCheck(name: string): { check: ReadinessCheck; release: () => void } {
  const waiting: Array<() => void> = [];
  return {
    check: { name, check: () => new Promise((resolve) => waiting.push(() => resolve(undefined))) },
    release: () => {
      for (const answer of waiting.splice(0)) answer();
    },
  };
}

/** Resolves with the connection error code, or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

function memoryLogger(): { logger: Logger; lines: () => Array<{ level: number; msg: string }> } {
  const written: string[] = [];
  const logger = createLogger({ level: 'info', pretty: false, destination: { write: (line: string) => void written.push(line) } });
  return { logger, lines: () => written.map((line) => JSON.parse(line) as { level: number; msg: string }) };
}

describe('startHealthServer', () => {
  it('answers /healthz with ok, the port it listens on (the one it reports, port 0 given) and the process id', async () => {
    const server = await start();
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect(server.port).toBeGreaterThan(0);
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.text()).toBe(`ok\nport: ${server.port}\npid: ${process.pid}\n`);
  });

  it('serves the instance metrics with the registry content type, ignoring the query string', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    metrics.stalledJobTaken();
    const server = await start({ metrics });
    const res = await fetch(`${server.url}/metrics?name[]=x`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(metrics.contentType);
    expect(await res.text()).toContain('report_sync_stalled_jobs_total 1\n');
  });

  it('answers 500 with a one-line reason when collecting fails, and says so in the log once', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    new Gauge({
      name: 'broken_gauge',
      help: 'a gauge whose collection fails',
      registers: [metrics.registry],
      collect() {
        throw new Error('collector broke\r\nforged: line');
      },
    });
    const { logger, lines } = memoryLogger();
    const server = await start({ metrics, logger });
    for (let i = 0; i < 2; i += 1) {
      const res = await fetch(`${server.url}/metrics`);
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toBe('could not collect metrics: collector broke forged: line\n');
    }
    expect(lines().filter((line) => line.level === 40)).toHaveLength(1);
  });

  it('is ready when every check is, listing each', async () => {
    const server = await start({ readiness: [ready('redis'), ready('warehouse')] });
    const res = await fetch(`${server.url}/readyz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.text()).toBe('ready\nredis: ok\nwarehouse: ok\n');
  });

  it('is not ready with the reason of each failing check: one that hangs, one that throws, one that says why', async () => {
    const warehouse = hangingCheck('warehouse');
    const checks: ReadinessCheck[] = [
      ready('redis'),
      warehouse.check,
      {
        name: 'identity',
        check: async () => {
          throw new Error('token endpoint\nexploded');
        },
      },
      { name: 'queue', check: async () => 'Redis at redis://host:6379 is unreachable (ECONNREFUSED)\r\nsecond line' },
    ];
    const { logger, lines } = memoryLogger();
    const server = await start({ readiness: checks, checkTimeoutMs: 100, logger });
    try {
      const startedAt = Date.now();
      const res = await fetch(`${server.url}/readyz`);
      expect(Date.now() - startedAt).toBeLessThan(2_000);
      expect(res.status).toBe(503);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.text()).toBe(
        [
          'not ready',
          'redis: ok',
          'warehouse: no answer within 100 ms',
          'identity: check failed: token endpoint exploded',
          'queue: Redis at redis://host:6379 is unreachable (ECONNREFUSED) second line',
          '',
        ].join('\n'),
      );
      // Probes repeat: the log says it once, not once per probe.
      expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
      expect(lines().filter((line) => line.msg === 'not ready')).toHaveLength(1);
    } finally {
      warehouse.release();
    }
  });

  it('shows each readiness check in /metrics at every scrape: 1 when it passes, 0 when it fails or hangs', async () => {
    const metrics = new SyncMetrics({ collectDefaults: false });
    let redisDown = false;
    let warehouseHangs = true;
    const readiness: ReadinessCheck[] = [
      { name: 'redis', check: async () => (redisDown ? 'Redis at redis://host:6379 is unreachable (ECONNREFUSED)' : undefined) },
      { name: 'warehouse', check: () => (warehouseHangs ? new Promise<undefined>(() => undefined) : Promise.resolve(undefined)) },
      ready('credentials'),
    ];
    const server = await start({ metrics, readiness, checkTimeoutMs: 100 });
    const readyLines = async (): Promise<string[]> => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return text.split('\n').filter((line) => line.startsWith('report_sync_ready{'));
    };

    expect(await readyLines()).toEqual(['report_sync_ready{check="redis"} 1', 'report_sync_ready{check="warehouse"} 0', 'report_sync_ready{check="credentials"} 1']);
    redisDown = true;
    warehouseHangs = false;
    expect(await readyLines()).toEqual(['report_sync_ready{check="redis"} 0', 'report_sync_ready{check="warehouse"} 1', 'report_sync_ready{check="credentials"} 1']);
  });

  it('answers HEAD like GET without a body', async () => {
    const server = await start();
    const res = await fetch(`${server.url}/healthz`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(await (await fetch(`${server.url}/healthz`)).text())));
    expect(await res.text()).toBe('');
    const metricsHead = await fetch(`${server.url}/metrics`, { method: 'HEAD' });
    expect(metricsHead.status).toBe(200);
    expect(await metricsHead.text()).toBe('');
  });

  it('refuses other methods with 405 and Allow, and unknown paths with 404', async () => {
    const server = await start();
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      const res = await fetch(`${server.url}${path}`, { method: 'POST', body: 'x' });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      await res.text();
    }
    const missing = await fetch(`${server.url}/metricsz`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('/metrics');
    expect((await fetch(`${server.url}/`)).status).toBe(404);
  });

  it('survives a client that hangs up before its answer', async () => {
    let release: (() => void) | undefined;
    const slow: ReadinessCheck = { name: 'slow', check: () => new Promise((resolve) => (release = () => resolve(undefined))) };
    const server = await start({ readiness: [slow], checkTimeoutMs: 5_000 });
    await new Promise<void>((resolve) => {
      const req = request(`${server.url}/readyz`);
      req.on('error', () => resolve());
      req.end();
      const waitForCheck = setInterval(() => {
        if (!release) return;
        clearInterval(waitForCheck);
        req.destroy();
      }, 5);
    });
    release!();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await (await fetch(`${server.url}/healthz`)).text()).toMatch(/^ok\n/);
  });

  it('rejects, naming host:port and metrics.port, when the port is taken', async () => {
    const first = await start();
    const attempt = start({ port: first.port });
    await expect(attempt).rejects.toThrow(`127.0.0.1:${first.port}`);
    await expect(attempt).rejects.toThrow('metrics.port');
    await expect(attempt).rejects.toThrow('EADDRINUSE');
    // The first server is untouched.
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
  });

  it('names the port setting it is given, and how several processes on one host each get a port', async () => {
    const first = await start();
    const attempt = start({ port: first.port, portSetting: 'metrics.port (REPORT_SYNC_METRICS__PORT, or --metrics-port)' });
    await expect(attempt).rejects.toThrow(`cannot serve metrics and health checks on 127.0.0.1:${first.port}`);
    await expect(attempt).rejects.toThrow(/\(EADDRINUSE\); choose another metrics\.port \(REPORT_SYNC_METRICS__PORT, or --metrics-port\)/);
    await expect(attempt).rejects.toThrow('or 0 for any free port');
  });

  it('answers /readyz within 2 s by default when a check hangs', async () => {
    const hanging = hangingCheck('redis');
    const server = await start({ readiness: [hanging.check] });
    try {
      const startedAt = Date.now();
      const res = await fetch(`${server.url}/readyz`);
      expect(Date.now() - startedAt).toBeLessThan(2_000);
      expect(res.status).toBe(503);
      expect(await res.text()).toBe('not ready\nredis: no answer within 1500 ms\n');
    } finally {
      hanging.release();
    }
  });

  it('leaves nothing listening after close(), open connections included', async () => {
    const hanging = hangingCheck('hanging');
    const server = await start({ readiness: [hanging.check], checkTimeoutMs: 10_000 });
    servers.splice(servers.indexOf(server), 1);
    try {
      // One idle keep-alive connection (fetch keeps it) and one waiting for its answer: close()
      // must wait for neither.
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const waiting = fetch(`${server.url}/readyz`).then(
        (res) => res.status,
        () => 'dropped',
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      const startedAt = Date.now();
      await server.close();
      expect(Date.now() - startedAt).toBeLessThan(1_000);
      expect(await waiting).toBe('dropped');
      expect(await tryConnect(server.port)).toBe('ECONNREFUSED');
      await server.close();
    } finally {
      // The dropped request's check is still waiting (with its 10 s timeout): let it end.
      hanging.release();
    }
  });
});
