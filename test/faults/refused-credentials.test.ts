import { afterEach, describe, expect, it } from 'vitest';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startFlakyIdentityProvider, type FlakyIdentityProvider } from '../helpers/flaky-identity-provider.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until } from '../helpers/until.js';

/*
 * Refused credentials in queue mode. A worker that exited with code 2 was restarted by its
 * supervisor (compose: restart unless-stopped) and asked again at once: a restart loop against the
 * identity provider, whose brute-force protection then locks the account. Now workers stay up, take
 * no jobs (they stay queued), report not ready, and the fleet asks again once per
 * token.rejectedRetryMs.
 */

// 1 to 5 January 2024, weekdays: 2 portfolios × 2 report types × 5 days.
const WEEK = ['--from', '2024-01-01', '--to', '2024-01-05'];
/** token.rejectedRetryMs of the fleet: the pace at which it may ask again with refused credentials. */
const RETRY_MS = 8_000;

describe('refused credentials in queue mode', () => {
  let rig: QueueRig | undefined;
  let idp: FlakyIdentityProvider | undefined;
  afterEach(async () => {
    await idp?.close();
    await rig?.close();
    rig = idp = undefined;
  });

  async function fleet(rejectedRetryMs: number) {
    rig = await startQueueRig({ settings: { token: { rejectedRetryMs } } });
    idp = await startFlakyIdentityProvider(`${rig.simulator.authUrl}/realms/${rig.simulator.realm}/protocol/openid-connect/token`);
    rig.env.REPORT_TOKEN_URL = idp.tokenUrl;
    await idp.setMode('reject');
    const workers = [rig.startWorker(), rig.startWorker()];
    await Promise.all(workers.map((worker) => rig!.ready(worker)));
    return { rig, idp, workers };
  }

  it('two workers ask at most once per token.rejectedRetryMs over three of them, stay up, and keep every job queued', async () => {
    const { rig, idp, workers } = await fleet(RETRY_MS);
    expect((await rig.cli(['backfill', ...WEEK])).code).toBe(0);
    await until(() => idp.requests.length >= 1, 10_000, 'the first token request');
    const firstAt = idp.requests[0]!.at;
    await new Promise((resolve) => setTimeout(resolve, 3 * RETRY_MS - (Date.now() - firstAt)));

    // Three paces after the first refusal: the first request, then at most one per pace for the whole fleet.
    expect(idp.requests.length).toBeGreaterThanOrEqual(2);
    expect(idp.requests.length).toBeLessThanOrEqual(4);
    for (let i = 1; i < idp.requests.length; i += 1) expect(idp.requests[i]!.at - idp.requests[i - 1]!.at).toBeGreaterThanOrEqual(RETRY_MS - 1_000);
    for (const worker of workers) {
      expect(worker.child.exitCode).toBeNull();
      // Said once per worker, with what to fix.
      const lines = worker
        .output()
        .split('\n')
        .filter((line) => line.includes('the identity provider refused the credentials: this worker takes no jobs'));
      expect(lines.length).toBeLessThanOrEqual(1);
    }
    const said = workers.map((worker) => worker.output()).join('');
    expect(said).toContain('Fix REPORT_CLIENT_ID, REPORT_CLIENT_SECRET, REPORT_USERNAME or REPORT_PASSWORD');
    expect(said).toContain('invalid_grant');
    const counts = await rig.queueCounts();
    expect(counts.failed).toBe(0);
    // The 20 slices, and the nightly schedule's next firing the workers made sure of.
    expect(counts.waiting + counts.prioritized + counts.delayed + counts.active).toBe(21);
    expect(rig.simulator.counters.exportRequests).toBe(0);
  }, 120_000);

  it('once the credentials are accepted again, the paused workers take the jobs again and load them', async () => {
    const { rig, idp, workers } = await fleet(2_000);
    expect((await rig.cli(['backfill', ...WEEK])).code).toBe(0);
    await until(() => workers.some((worker) => worker.output().includes('refused the credentials')), 10_000, 'the refusal');
    await idp.setMode('up');
    // The slices refused meanwhile are failed in the ledger (AUTH_REJECTED, saying why) until their jobs run again.
    await until(
      async () => {
        const counts = await countWarehouse((await rig.warehouse()).db);
        return counts.ledger === 20 && counts.notDone === 0;
      },
      30_000,
      'every slice to load',
    );
    expect(workers.map((worker) => worker.output()).join('')).toContain('the identity provider accepts the credentials again: taking jobs again');
    // A refusal remembered by the fleet held every request back until it expired.
    expect(idp.requests.filter((request) => request.mode === 'reject').length).toBeLessThanOrEqual(3);
  }, 60_000);
});
