import { afterEach, describe, expect, it } from 'vitest';
import { shiftIsoDate, todayIn } from '../../src/dates/report-date.js';
import { startHttpServer } from '../helpers/http-server.js';
import { makeZip } from '../helpers/make-zip.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until } from '../helpers/until.js';
import { Receiver } from '../helpers/webhook-receiver.js';

/*
 * A night in queue mode is told once: the worker that fanned it out follows its slices to their
 * outcomes, then sends one alert if anything failed or was loaded with warnings, and records the
 * fleet's last successful night (the freshness metric) if nothing failed.
 */
describe('a queued night', () => {
  let rig: QueueRig | undefined;
  let receiver: Receiver | undefined;
  let upstream: Awaited<ReturnType<typeof startHttpServer>> | undefined;
  afterEach(async () => {
    await receiver?.close();
    await upstream?.close();
    await rig?.close();
    rig = receiver = upstream = undefined;
  });

  it('with a failed slice: one alert for the whole night, naming it, and no freshness record', async () => {
    rig = await startQueueRig({ settings: { schedule: { timeZone: 'UTC', lookbackDays: 1 } } });
    receiver = await Receiver.start();
    rig.env.REPORT_ALERT_WEBHOOK_URL = receiver.url.href;
    const yesterday = shiftIsoDate(todayIn('UTC'), -1);
    rig.simulator.script(1002, 'constituent.close', yesterday, [{ status: 403 }]);
    const worker = rig.startWorker();
    await rig.ready(worker);
    await rig.cli(['scheduler']);
    await rig.promoteNightly();
    await until(() => receiver!.requests.length > 0, 30_000, 'the night’s alert');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(receiver.requests).toHaveLength(1);
    const text = String(receiver.requests[0]!.body.text);
    // The alert's title line is the product: checked whole.
    expect(text).toContain(`report-sync nightly of ${yesterday} (queue report-exports): 1 of 8 slices failed`);
    expect(text).toContain('EXPORT_FORBIDDEN');
    expect(worker.output()).toContain('the night finished with slices failed or not attempted');
  }, 60_000);

  it('with every slice loaded or no_data: the fleet records it, and every worker’s freshness metric shows it', async () => {
    rig = await startQueueRig({ settings: { schedule: { timeZone: 'UTC', lookbackDays: 0 } } });
    const workers = [rig.startWorker(), rig.startWorker()];
    await Promise.all(workers.map((worker) => rig!.ready(worker)));
    await rig.cli(['scheduler']);
    const before = Math.floor(Date.now() / 1000);
    await rig.promoteNightly();
    await until(() => workers.some((worker) => worker.output().includes('the night finished: every slice loaded or no_data')), 30_000, 'the night to finish');
    for (const worker of workers) {
      const base = rig.metricsUrl(worker);
      const text = await (await fetch(`${base}/metrics`)).text();
      const value = Number(/^report_sync_last_successful_night_timestamp_seconds (\S+)$/m.exec(text)?.[1]);
      expect(value).toBeGreaterThanOrEqual(before);
    }
  }, 60_000);

  it('with slices loaded with warnings: the night succeeds, and one alert groups the warnings by check and portfolio', async () => {
    rig = await startQueueRig({ settings: { schedule: { timeZone: 'UTC', lookbackDays: 0 } } });
    receiver = await Receiver.start();
    const yesterday = shiftIsoDate(todayIn('UTC'), -1);
    // An upstream of the test's own: constituent files whose weights sum to 1.4; no index data.
    const header = 'Effective Date,ISIN,Security Name,Security Ticker,Exchange Code,Closing Price,Currency,Closing Fx,Index Shares,Index Weighting';
    const zip = await makeZip({ 'constituents.csv': [header, ...[0, 1, 2, 3].map((i) => `${yesterday},XS000000000${i},Acme,ACM,XLON,12.5,EUR,1.1,100,0.35`)].join('\r\n') });
    upstream = await startHttpServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://upstream');
      if (url.searchParams.get('reportType') !== 'constituent.close') {
        res.writeHead(200, { 'content-length': '0' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/zip', 'content-disposition': 'attachment; filename="constituents.zip"', 'content-length': String(zip.length) });
      res.end(zip);
    });
    Object.assign(rig.env, {
      REPORT_BASE_URL: upstream.url,
      REPORT_ALERT_WEBHOOK_URL: receiver.url.href,
      REPORT_ALERT_WEBHOOK_FORMAT: 'json',
      REPORT_ALERT_DEPLOYMENT: 'night-rig',
    });
    const worker = rig.startWorker();
    await rig.ready(worker);
    await rig.cli(['scheduler']);
    await rig.promoteNightly();
    await until(() => receiver!.requests.length > 0, 30_000, 'the night’s alert');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(receiver.requests).toHaveLength(1);
    const body = receiver.requests[0]!.body as { warnings: { slices: number; groups: { check: string; portfolioId: number; slices: number; measured: { min: number } }[] } };
    expect(body).toMatchObject({
      kind: 'night',
      deployment: 'night-rig',
      title: `report-sync nightly of ${yesterday} (queue report-exports): 2 of 4 slices loaded with warnings`,
      counts: { loaded: 2, warned: 2, noData: 2, failed: 0 },
    });
    expect(body.warnings.slices).toBe(2);
    expect(body.warnings.groups.map((group) => [group.check, group.portfolioId, group.slices])).toEqual([
      ['weightsSum', 1001, 1],
      ['weightsSum', 1002, 1],
    ]);
    expect(body.warnings.groups[0]!.measured.min).toBeCloseTo(0.4, 9);
    expect(worker.output()).toContain('the night finished: every slice loaded or no_data');
  }, 60_000);
});
