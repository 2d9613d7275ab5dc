import type { Queue } from 'bullmq';
import { settingsSchema, type Settings } from '../config/settings-schema.js';
import type { ReportType } from '../reports/report-types.js';
import { NIGHTLY_JOB, NIGHTLY_SCHEDULER_ID } from './slice-job.js';

/**
 * What a night syncs, carried by the scheduled job itself, so that the fan-out does what the
 * schedule was registered with, whichever worker (with whatever settings) fires it.
 */
export interface NightlyPlanSettings {
  readonly cron: string;
  readonly timeZone: string;
  readonly portfolios: readonly number[];
  readonly reportTypes: readonly ReportType[];
  readonly lookbackDays: number;
}

/** The data of a nightly fan-out job. */
export interface NightlyJobData {
  readonly nightly: NightlyPlanSettings;
}

/** The nightly's settings as one process's configuration gives them. */
export function nightlyPlanSettings(settings: Pick<Settings, 'schedule' | 'portfolios' | 'reportTypes'>): NightlyPlanSettings {
  return {
    cron: settings.schedule.cron,
    timeZone: settings.schedule.timeZone,
    portfolios: [...settings.portfolios],
    reportTypes: [...settings.reportTypes],
    lookbackDays: settings.schedule.lookbackDays,
  };
}

/**
 * The nightly settings a fan-out job carries, checked (job data sits in Redis, where anyone who
 * can reach it can change it); undefined when it carries none that are usable (a schedule
 * registered by an older release, or tampered with).
 */
export function nightlyPlanSettingsOf(data: unknown): NightlyPlanSettings | undefined {
  const nightly = (data as { nightly?: unknown } | null | undefined)?.nightly;
  if (typeof nightly !== 'object' || nightly === null) return undefined;
  const { cron, timeZone, portfolios, reportTypes, lookbackDays } = nightly as Record<string, unknown>;
  // The very rules the settings files are held to (a cron BullMQ can use, real zones, ids, types).
  const parsed = settingsSchema.safeParse({ portfolios, reportTypes, schedule: { cron, timeZone, lookbackDays } });
  return parsed.success ? nightlyPlanSettings(parsed.data) : undefined;
}

/** How two sets of nightly settings differ, one phrase per setting, e.g. `lookbackDays 7 → 2`. */
export function nightlyDifferences(from: NightlyPlanSettings, to: NightlyPlanSettings): string[] {
  const differences: string[] = [];
  const compare = (name: string, a: unknown, b: unknown) => {
    const before = JSON.stringify(a);
    const after = JSON.stringify(b);
    if (before !== after) differences.push(`${name} ${before} → ${after}`);
  };
  compare('schedule.cron', from.cron, to.cron);
  compare('schedule.timeZone', from.timeZone, to.timeZone);
  compare('portfolios', from.portfolios, to.portfolios);
  compare('reportTypes', from.reportTypes, to.reportTypes);
  compare('schedule.lookbackDays', from.lookbackDays, to.lookbackDays);
  return differences;
}

/** What {@link ensureNightlySchedule} found and did. */
export interface NightlyScheduleCheck {
  /** `created`: there was none; `replaced`: there was one with other settings; `kept`: as wanted, or (healing) left as registered. */
  readonly action: 'created' | 'replaced' | 'kept';
  /** The registered schedule's settings, where they differ from the ones given. */
  readonly differences: readonly string[];
  /** The settings the schedule has now. */
  readonly registered: NightlyPlanSettings;
  /** When it fires next (ms since the epoch), if known. */
  readonly nextRunAt: number | undefined;
}

/**
 * Makes sure the nightly job scheduler exists. `register` (the `scheduler` command) sets it to
 * `wanted`; `heal` (every worker) only creates a missing one and reports how a registered one
 * differs. The id is fixed, so any number of workers healing at once leave exactly one schedule.
 */
export async function ensureNightlySchedule(
  queue: Queue,
  wanted: NightlyPlanSettings,
  options: { readonly mode: 'register' | 'heal'; readonly priority: number },
): Promise<NightlyScheduleCheck> {
  const existing = await queue.getJobScheduler(NIGHTLY_SCHEDULER_ID);
  const registered = existing ? registeredSettings(existing) : undefined;
  const differences = registered ? nightlyDifferences(registered, wanted) : [];
  if (existing && registered && (differences.length === 0 || options.mode === 'heal')) {
    return { action: 'kept', differences, registered, nextRunAt: existing.next };
  }
  const data: NightlyJobData = { nightly: wanted };
  // No removeOnComplete / removeOnFail here: the workers' queue.keepCompleted / keepFailed trim every
  // job; a count on this job would trim the whole completed set to it.
  await queue.upsertJobScheduler(NIGHTLY_SCHEDULER_ID, { pattern: wanted.cron, tz: wanted.timeZone }, { name: NIGHTLY_JOB, data, opts: { priority: options.priority } });
  const next = await queue.getJobScheduler(NIGHTLY_SCHEDULER_ID);
  return {
    action: existing ? 'replaced' : 'created',
    differences: registered ? differences : [],
    registered: wanted,
    nextRunAt: next?.next,
  };
}

/** A registered schedule's settings: its pattern and zone, and what its job template carries. */
function registeredSettings(scheduler: Awaited<ReturnType<Queue['getJobScheduler']>> & object): NightlyPlanSettings | undefined {
  const carried = nightlyPlanSettingsOf(scheduler.template?.data);
  if (!carried) return undefined;
  return { ...carried, cron: scheduler.pattern ?? carried.cron, timeZone: scheduler.tz ?? carried.timeZone };
}
