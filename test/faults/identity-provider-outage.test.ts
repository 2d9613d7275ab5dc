import { afterEach, describe, expect, it } from 'vitest';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import type { GatewaySimulator } from '../../src/simulator/gateway-simulator.js';
import { startFlakyIdentityProvider, type FlakyIdentityProvider, type IdentityProviderMode } from '../helpers/flaky-identity-provider.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { capturedIo } from '../helpers/captured-io.js';
import { until } from '../helpers/until.js';
import { main } from '../../src/cli/main.js';
import { loggedErrorMessage } from '../helpers/logged-error.js';

/*
 * The identity provider down for a while. Before token.unavailableWaitMs existed, every slice
 * spent its attempts on the outage (5 attempts with the default 1 s doubling backoff span 7 to
 * 15 s) and a one-minute outage failed them all as AUTH_UNAVAILABLE. Now the one renewal in
 * flight waits for the provider (backoff with jitter, bounded by the setting) and every job waits
 * on it without spending an attempt. The outages here are a few seconds, by configuration.
 */

const WEEK = ['--from', '2024-01-01', '--to', '2024-01-05'];

function tokenUrlOf(simulator: GatewaySimulator): string {
  return `${simulator.authUrl}/realms/${simulator.realm}/protocol/openid-connect/token`;
}

/** Puts the provider in `mode` now and back up after `ms`; `cancel()` in a finally. */
function outage(idp: FlakyIdentityProvider, mode: IdentityProviderMode, ms: number) {
  const started = idp.setMode(mode);
  const timer = setTimeout(() => void started.then(() => idp.setMode('up')), ms);
  return { started, cancel: () => clearTimeout(timer) };
}

describe('identity provider down for a while', () => {
  let rig: SyncRig | undefined;
  let queueRig: QueueRig | undefined;
  let idp: FlakyIdentityProvider | undefined;
  afterEach(async () => {
    await idp?.close();
    await rig?.close();
    await queueRig?.close();
    rig = queueRig = idp = undefined;
  });

  async function inProcess(settings: SettingsInput) {
    rig = await startSyncRig({ simulator: { latencyMs: 20 }, settings });
    idp = await startFlakyIdentityProvider(tokenUrlOf(rig.simulator));
    return { rig, idp, env: { REPORT_TOKEN_URL: idp.tokenUrl } };
  }

  it('in-process: once a token was obtained, jobs wait through a 2 s outage (connections refused) without spending attempts, and every slice loads', async () => {
    // 1 s tokens and 300 ms answers: the run must renew its token while the provider is down.
    rig = await startSyncRig({ simulator: { latencyMs: 300, tokenLifetimeSeconds: 1 }, settings: { token: { unavailableWaitMs: 20_000 } } });
    idp = await startFlakyIdentityProvider(tokenUrlOf(rig.simulator));
    const env = { REPORT_TOKEN_URL: idp.tokenUrl };
    let down: ReturnType<typeof outage> | undefined;
    try {
      const running = rig.cli(['run', ...WEEK], env);
      // The outage starts once a token was obtained (an export request carries it), not when the
      // first token request arrives: on a busy machine its answer could still be on the way, and a
      // provider that never gave a token is configuration, not an outage.
      await until(() => rig!.simulator.counters.exportRequests >= 1, 5_000, 'the first export request, made with the first token');
      down = outage(idp, 'refuse', 2_000);
      const result = await running;
      expect(result.code, result.stdout).toBe(0);
      expect(result.stdout).toMatch(/loaded\s+20/);
      expect(result.stdout).toMatch(/failed\s+0/);
      const warehouse = await rig.warehouse();
      const ledger = await warehouse.db.selectFrom('report_loads').select(['status', 'attempts']).execute();
      expect(ledger).toHaveLength(20);
      expect(ledger.every((row) => row.status === 'loaded' && row.attempts === 1)).toBe(true);
      const waits = result.logLines.filter((line) => String(line.msg).startsWith('identity provider unavailable'));
      // One waiter asks, with backoff from 1 s doubling: a few asks in 2 s, not one per job.
      expect(waits.length).toBeGreaterThanOrEqual(1);
      expect(waits.length).toBeLessThanOrEqual(5);
      expect(waits[0]).toMatchObject({ level: 40, code: 'AUTH_UNAVAILABLE' });
      expect(loggedErrorMessage(waits[0])).toContain('ECONNREFUSED');
      expect(result.logLines.some((line) => line.msg === 'identity provider answers again; jobs go on')).toBe(true);
    } finally {
      down?.cancel();
    }
  });

  it('in-process: a refused connection at the very first token request is configuration: exit 2 at once, naming the address settings', async () => {
    const { rig, idp, env } = await inProcess({ token: { unavailableWaitMs: 300_000 } });
    await idp.setMode('refuse');
    const startedAt = Date.now();
    const result = await rig.cli(['run', ...WEEK], env);
    expect(result.code).toBe(2);
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(result.stdout).toContain("Stopped early: nothing answers at the identity provider's address");
    expect(result.stdout).toContain('(ECONNREFUSED)');
    expect(result.stdout).toContain('check REPORT_AUTH_URL and REPORT_REALM (or REPORT_TOKEN_URL)');
    expect(result.logLines.some((line) => String(line.msg).startsWith('identity provider unavailable'))).toBe(false);
  });

  it('in-process: the first SIGTERM ends a wait for the identity provider at once, leaving every slice as it was', async () => {
    const { rig, idp, env } = await inProcess({ token: { unavailableWaitMs: 300_000 } });
    await idp.setMode('503');
    const controller = new AbortController();
    const io = { ...capturedIo({ ...rig.env, ...env }, rig.dir), signal: controller.signal };
    const running = main(['run', ...WEEK], io);
    await until(() => io.logs.text.includes('identity provider unavailable'), 10_000, 'the first wait');
    const stoppedAt = Date.now();
    controller.abort();
    expect(await running).toBe(1);
    expect(Date.now() - stoppedAt).toBeLessThan(2_000);
    expect(io.stdout.text).toContain('Interrupted');
    expect(io.stdout.text).toMatch(/failed\s+0/);
    const warehouse = await rig.warehouse();
    expect(await warehouse.db.selectFrom('report_loads').select('status').execute()).toEqual([]);
  });

  it('in-process: an outage longer than token.unavailableWaitMs fails the slices as AUTH_UNAVAILABLE, saying so', async () => {
    const { rig, idp, env } = await inProcess({ token: { unavailableWaitMs: 1_500 } });
    await idp.setMode('503');
    const startedAt = Date.now();
    const result = await rig.cli(['run', ...WEEK], env);
    const seconds = (Date.now() - startedAt) / 1000;
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/failed\s+20/);
    expect(result.stdout).toContain('AUTH_UNAVAILABLE: identity provider unavailable for');
    expect(result.stdout).toContain('longer than token.unavailableWaitMs (1.5 s)');
    expect(result.stdout).toContain('answered 503');
    expect(seconds).toBeGreaterThan(1.4);
    expect(seconds).toBeLessThan(15);
    const warehouse = await rig.warehouse();
    const ledger = await warehouse.db.selectFrom('report_loads').select(['status', 'error']).execute();
    expect(ledger).toHaveLength(20);
    for (const row of ledger) {
      expect(row.status).toBe('failed');
      expect(row.error).toMatch(/^AUTH_UNAVAILABLE: identity provider unavailable for .*token\.unavailableWaitMs/);
    }
    // 20 slices × 4 attempts, yet the provider is asked once per backoff step, not once per attempt.
    expect(idp.requests.length).toBeLessThanOrEqual(6);
    expect(idp.requests.length).toBeGreaterThanOrEqual(2);
  });

  it('in-process: refused credentials after an outage still stop the run at once (exit 2)', async () => {
    const { rig, idp, env } = await inProcess({ token: { unavailableWaitMs: 20_000 } });
    const down = outage(idp, '503', 1_000);
    try {
      await down.started;
      const startedAt = Date.now();
      const result = await rig.cli(['run', ...WEEK], { ...env, REPORT_PASSWORD: 'wrong-password' });
      expect(result.code).toBe(2);
      expect(result.stdout + result.stderr).toContain('invalid_grant');
      // It stopped at the first refusal after the provider came back, not after the 20 s wait.
      expect(Date.now() - startedAt).toBeLessThan(6_000);
      expect(idp.requests.filter((r) => r.mode === 'up')).toHaveLength(1);
    } finally {
      down.cancel();
    }
  });

  it('queue mode: two workers wait through a 3 s outage (503) on the shared token, and every slice loads once', async () => {
    queueRig = await startQueueRig({ simulator: { latencyMs: 20 }, settings: { token: { unavailableWaitMs: 20_000 } } });
    idp = await startFlakyIdentityProvider(tokenUrlOf(queueRig.simulator));
    queueRig.env.REPORT_TOKEN_URL = idp.tokenUrl;
    const workers = [queueRig.startWorker(), queueRig.startWorker()];
    await Promise.all(workers.map((worker) => queueRig!.ready(worker)));
    const down = outage(idp, '503', 3_000);
    try {
      await down.started;
      const result = await queueRig.cli(['backfill', ...WEEK, '--wait']);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/loaded\s+20/);
      const warehouse = await queueRig.warehouse();
      const ledger = await warehouse.db.selectFrom('report_loads').select(['status', 'attempts']).execute();
      expect(ledger).toHaveLength(20);
      expect(ledger.every((row) => row.status === 'loaded' && row.attempts === 1)).toBe(true);
      // 2 workers × 4 jobs waited, but the fleet asked once per backoff step (holder of the Redis lock).
      const during = idp.requests.filter((r) => r.mode === '503').length;
      expect(during).toBeGreaterThanOrEqual(2);
      expect(during).toBeLessThanOrEqual(5);
      expect(idp.requests.filter((r) => r.mode === 'up')).toHaveLength(1);
      const output = workers.map((worker) => worker.output()).join('');
      expect(output).toContain('identity provider unavailable: jobs wait for it');
    } finally {
      down.cancel();
    }
  });
});
