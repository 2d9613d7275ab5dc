import { afterEach, describe, expect, it } from 'vitest';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { Receiver } from '../helpers/webhook-receiver.js';

/*
 * One alert per run, never one per slice: counts by outcome, failures grouped by code and
 * portfolio, the command that re-runs them; nothing for a run whose only trouble recovered on
 * retry; delivery retried against a receiver that fails, and the URL a secret.
 */
describe('the alert webhook', () => {
  let rig: SyncRig | undefined;
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    await rig?.close();
    rig = receiver = undefined;
  });

  it('gets exactly one message for a run with failures, delivered on the third try after a 503 and a reset', async () => {
    rig = await startSyncRig();
    receiver = await Receiver.start([{ status: 503 }, 'destroy', { status: 200, body: 'ok' }]);
    for (const date of ['2024-03-04', '2024-03-05', '2024-03-06']) rig.simulator.script(1002, 'index', date, [{ status: 404, body: '{"error":"Not Found"}' }]);
    rig.simulator.script(1001, 'constituent.close', '2024-03-05', [{ status: 403 }]);
    const result = await rig.cli(['run', '--from', '2024-03-04', '--to', '2024-03-08'], { REPORT_ALERT_WEBHOOK_URL: receiver.url.href });
    expect(result.code).toBe(1);
    expect(receiver.requests).toHaveLength(3);
    const text = String(receiver.requests[2]!.body.text);
    expect(text).toContain('report-sync run of 2024-03-04 to 2024-03-08: 4 of 20 slices failed');
    expect(text).toContain('EXPORT_NOT_FOUND');
    expect(text).toContain('3 slices');
    expect(text).toContain('EXPORT_FORBIDDEN');
    // The retry command is what the user copies: checked whole.
    expect(text).toContain('report-sync run --from 2024-03-04 --to 2024-03-06 --portfolios 1001,1002 --report-types constituent.close,index --only-missing');
    // The same message each time: one alert, retried, not one per slice.
    expect(receiver.requests.map((request) => request.body.text)).toEqual([text, text, text]);
    expect(`${result.stdout}${result.stderr}${result.logs}`).not.toContain(receiver.url.pathname);
  });

  it('sends the userinfo of the URL as Basic authorization, and prints neither it nor the URL', async () => {
    rig = await startSyncRig();
    receiver = await Receiver.start();
    rig.simulator.script(1001, 'index', '2024-03-04', [{ status: 400 }]);
    const url = new URL(receiver.url.href);
    url.username = 'hook-user';
    url.password = 'Zq9-hook-pw';
    const env = { REPORT_ALERT_WEBHOOK_URL: url.href, LOG_LEVEL: 'trace' };
    const result = await rig.cli(['run', '--from', '2024-03-04', '--to', '2024-03-04'], env);
    expect(result.code).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from('hook-user:Zq9-hook-pw').toString('base64')}`);
    const shown = await rig.cli(['config'], env);
    expect(shown.stdout).toMatch(/REPORT_ALERT_WEBHOOK_URL +set /);
    for (const output of [result, shown]) {
      const all = `${output.stdout}${output.stderr}${output.logs}`;
      expect(all).not.toContain('Zq9-hook-pw');
      expect(all).not.toContain(receiver.url.pathname);
    }
  });

  it('sends nothing for a run whose only failure recovered on retry', async () => {
    rig = await startSyncRig();
    receiver = await Receiver.start();
    rig.simulator.script(1001, 'index', '2024-03-04', [{ status: 500 }, { status: 503 }]);
    const result = await rig.cli(['run', '--from', '2024-03-04', '--to', '2024-03-04'], { REPORT_ALERT_WEBHOOK_URL: receiver.url.href });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('2 retries');
    expect(receiver.requests).toHaveLength(0);
  });

  it('sends the plain JSON form when asked, and refuses a bad URL before any work (exit 2, the value unquoted)', async () => {
    rig = await startSyncRig();
    receiver = await Receiver.start();
    rig.simulator.script(1001, 'index', '2024-03-04', [{ status: 400 }]);
    const result = await rig.cli(['run', '--from', '2024-03-04', '--to', '2024-03-04'], { REPORT_ALERT_WEBHOOK_URL: receiver.url.href, REPORT_ALERT_WEBHOOK_FORMAT: 'json' });
    expect(result.code).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.body).toMatchObject({
      source: 'report-sync',
      kind: 'run',
      counts: { failed: 1, loaded: 3 },
      failures: { total: 1, groups: [{ code: 'EXPORT_BAD_REQUEST', portfolioId: 1001, slices: 1 }] },
    });

    const before = rig.simulator.counters.exportRequests;
    const bad = await rig.cli(['run', '--from', '2024-03-04', '--to', '2024-03-04'], { REPORT_ALERT_WEBHOOK_URL: 'ftp://hooks.example/secret-token-xyz' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('REPORT_ALERT_WEBHOOK_URL must start with http:// or https://');
    expect(bad.stderr).not.toContain('secret-token-xyz');
    expect(rig.simulator.counters.exportRequests).toBe(before);
  });
});
