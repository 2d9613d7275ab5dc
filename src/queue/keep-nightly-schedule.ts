import { setTimeout as sleep } from 'node:timers/promises';
import type { Settings } from '../config/settings-schema.js';
import type { Logger } from '../logging/logger.js';
import type { ExportQueue } from './export-queue.js';
import { ensureNightlySchedule, type NightlyPlanSettings } from './nightly-schedule.js';

export interface KeepNightlyScheduleOptions {
  readonly exportQueue: ExportQueue;
  /** This worker's own nightly settings: what a missing schedule is re-created with. */
  readonly own: NightlyPlanSettings;
  readonly settings: Pick<Settings, 'queue' | 'schedule'>;
  readonly logger: Logger;
  readonly shutdown: AbortSignal;
  /** Whether Redis is known to be down (its connector already says so). */
  readonly redisDown: () => boolean;
}

/**
 * Makes sure the nightly schedule exists, now and every `schedule.checkIntervalMs`: a Redis
 * restarted without persistence loses it. Says when it re-created it, and once per difference when
 * the registered settings are not this worker's: the schedule's own win, never silently replaced.
 */
export async function keepNightlySchedule(options: KeepNightlyScheduleOptions): Promise<void> {
  const { exportQueue, own, settings, logger, shutdown } = options;
  let reported = '';
  // Whether this worker has seen the schedule in Redis: only then is a schedule gone a schedule lost.
  let seen = false;
  while (!shutdown.aborted) {
    try {
      const check = await ensureNightlySchedule(exportQueue.queue, own, { mode: 'heal', priority: settings.queue.nightlyPriority });
      const schedule = { cron: own.cron, timeZone: own.timeZone, nextRunAt: check.nextRunAt ? new Date(check.nextRunAt).toISOString() : undefined };
      if (check.action !== 'kept' && seen) {
        logger.warn(schedule, "the nightly schedule was missing from Redis (flushed, or restarted without persistence): re-created it from this worker's settings");
      } else if (check.action !== 'kept') {
        // A new install, or a Redis that lost its data before this worker started: nothing tells them apart.
        logger.info(schedule, `registered the nightly schedule, which queue ${exportQueue.queue.name} did not have yet, from this worker's settings`);
      }
      seen = true;
      const differences = check.differences.join('; ');
      if (differences !== '' && differences !== reported) {
        logger.warn(
          { differences: check.differences },
          "the registered nightly schedule's settings differ from this worker's: the schedule's are used; run report-sync scheduler with the settings you want",
        );
      }
      reported = differences;
    } catch (error) {
      // Redis trouble is already reported by the connector; the next round tries again.
      if (!options.redisDown() && !shutdown.aborted) logger.error({ err: error }, 'could not check the nightly schedule');
    }
    await sleep(settings.schedule.checkIntervalMs, undefined, { signal: shutdown }).catch(() => undefined);
  }
}
