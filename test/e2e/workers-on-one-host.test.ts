import { afterEach, describe, expect, it } from 'vitest';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import type { CliProcess } from '../helpers/cli-process.js';

/*
 * Several workers on one host. The second worker with the default metrics port used to print
 * "cannot serve metrics … EADDRINUSE" and then neither exit nor take jobs, with two Redis
 * connections open, until SIGTERM killed it (143). Now it stops at once (exit 2) with nothing left
 * open, naming the setting to change; with port 0 each worker takes a free port and says which.
 */

/** The port a worker said it serves metrics on, from its log line. */
function loggedPort(worker: CliProcess): number {
  const line = worker
    .output()
    .split('\n')
    .find((candidate) => candidate.includes('serving metrics and health checks'));
  const port = /"port":(\d+)/.exec(line ?? '')?.[1];
  if (port === undefined) throw new Error(`the worker did not log its metrics port:\n${worker.output()}`);
  return Number(port);
}

describe('several workers on one host', () => {
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('the second worker on the default metrics port exits 2 at once, naming the setting and how to pick another', async () => {
    // No metrics.port in the rig's settings: the default, 9464.
    rig = await startQueueRig({ settings: { metrics: { port: undefined } } });
    const first = rig.startWorker();
    await rig.ready(first);
    expect(rig.metricsUrl(first)).toBe('http://127.0.0.1:9464');

    const startedAt = Date.now();
    const second = rig.startWorker();
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([second.exited, new Promise((resolve) => (timer = setTimeout(() => resolve('still running after 15 s'), 15_000)))]);
    clearTimeout(timer);
    const seconds = (Date.now() - startedAt) / 1000;
    expect(code, second.output()).toBe(2);
    const said = second.output();
    expect(said).toContain('cannot serve metrics and health checks on 127.0.0.1:9464');
    expect(said).toContain('EADDRINUSE');
    expect(said).toContain('metrics.port (REPORT_SYNC_METRICS__PORT, or --metrics-port)');
    expect(said).toContain('a port of its own for each process, or 0 for any free port');
    // One line, no stack, and it never connected or took a job.
    expect(said).not.toMatch(/\n\s+at /);
    expect(said).not.toContain('worker ready');

    // The first one goes on.
    expect(first.child.exitCode).toBeNull();
    expect((await fetch(`${rig.metricsUrl(first)}/readyz`)).status).toBe(200);
    console.info(`second worker on a taken metrics port: exit ${String(code)} after ${seconds.toFixed(1)} s`);
  }, 60_000);

  it('with port 0, two workers both run, each on a port of its own that it logs and shows in /healthz', async () => {
    rig = await startQueueRig({ settings: { metrics: { port: 0 } } });
    const workers = [rig.startWorker(), rig.startWorker(['--metrics-port', '0'])];
    await Promise.all(workers.map((worker) => rig!.ready(worker)));
    const ports = workers.map(loggedPort);
    expect(ports[0]).not.toBe(ports[1]);
    for (const [i, worker] of workers.entries()) {
      expect(ports[i]).toBeGreaterThan(0);
      const health = await fetch(`http://127.0.0.1:${ports[i]}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.text()).toBe(`ok\nport: ${ports[i]}\npid: ${worker.child.pid}\n`);
      expect(worker.child.exitCode).toBeNull();
    }
    // And they work as a fleet.
    const result = await rig.cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-05', '--wait']);
    expect(result.code, result.stdout).toBe(0);
  }, 60_000);
});
