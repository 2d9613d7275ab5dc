import { afterEach, describe, expect, it } from 'vitest';
import { shiftIsoDate, todayIn } from '../../src/report-date.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until } from '../helpers/until.js';
import { Receiver } from '../helpers/webhook-receiver.js';

/*
 * A night in queue mode is told once: the worker that fanned it out follows its slices to their
 * outcomes, then sends one alert if anything failed, or records the fleet's last successful night
 * (the freshness metric) if nothing did.
 */
describe('a queued night', () => {
  let rig: QueueRig | undefined;
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    await rig?.close();
    rig = receiver = undefined;
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
});
