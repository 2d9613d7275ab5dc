import { UsageError } from '../../src/errors/sync-error.js';
import { isIsoDate } from '../../src/dates/is-iso-date.js';
import type { NightInProgress } from '../../src/queue/follow-night.js';
import { nightlyPlanSettingsOf, type NightlyPlanSettings } from '../../src/queue/nightly-schedule.js';
import { isReportType, type ReportType } from '../../src/reports/report-types.js';

/** What a night is planned with: the nightly settings, no secrets; `now` moves "yesterday" (tests). */
export type NightlyPayload = Pick<NightlyPlanSettings, 'portfolios' | 'reportTypes' | 'timeZone' | 'lookbackDays'> & { readonly now?: Date };

/** The payload of a night planned with `nightly` settings (the schedule's, or one process's own). */
export function nightlyPayloadOf(nightly: NightlyPlanSettings, now?: Date): NightlyPayload {
  const { portfolios, reportTypes, timeZone, lookbackDays } = nightly;
  return now === undefined ? { portfolios, reportTypes, timeZone, lookbackDays } : { portfolios, reportTypes, timeZone, lookbackDays, now };
}

/** A nightly fan-out job's data once checked. */
export interface PlanNightData {
  /**
   * The settings the schedule was registered with, checked by the settings files' own rules;
   * undefined when the job carries none that are usable (registered by an older release, or
   * tampered with): the worker then plans with its own.
   */
  readonly nightly: NightlyPlanSettings | undefined;
  /** The night already fanned out by a worker that stopped while following it: only followed on. */
  readonly night: NightInProgress | undefined;
}

/**
 * A fan-out job's data as read from Redis (`{ nightly, night? }`), checked. Unusable settings are
 * not an error (see {@link PlanNightData.nightly}); a malformed `night` is, since following it would
 * count the wrong outcomes: throws a `USAGE_INVALID` error naming the field, worded "data is not …".
 */
export function parsePlanNightData(data: unknown): PlanNightData {
  const night = (data as { night?: unknown } | null | undefined)?.night;
  return { nightly: nightlyPlanSettingsOf(data), night: night === undefined ? undefined : nightInProgressOf(night) };
}

function nightInProgressOf(value: unknown): NightInProgress {
  const bad = (field: string, what: string) =>
    new UsageError(`data is not a valid night in progress: night.${field} ${JSON.stringify(pick(value, field)) ?? 'undefined'} is not ${what}`);
  if (typeof value !== 'object' || value === null) throw new UsageError(`data is not a valid night in progress: night is not an object`);
  const { reportDate, since, expected, range } = value as Record<string, unknown>;
  if (typeof reportDate !== 'string' || !isIsoDate(reportDate)) throw bad('reportDate', 'a date in YYYY-MM-DD form');
  if (typeof since !== 'string' || Number.isNaN(Date.parse(since))) throw bad('since', 'an ISO time');
  if (typeof expected !== 'number' || !Number.isInteger(expected) || expected < 0) throw bad('expected', 'a count of slices');
  if (typeof range !== 'object' || range === null) throw bad('range', 'a slice range');
  const { from, to, portfolios, reportTypes } = range as Record<string, unknown>;
  if (typeof from !== 'string' || !isIsoDate(from)) throw bad('range.from', 'a date in YYYY-MM-DD form');
  if (typeof to !== 'string' || !isIsoDate(to)) throw bad('range.to', 'a date in YYYY-MM-DD form');
  if (!Array.isArray(portfolios) || !portfolios.every((id) => Number.isInteger(id) && (id as number) > 0)) throw bad('range.portfolios', 'a list of portfolio ids');
  if (!Array.isArray(reportTypes) || !reportTypes.every((type) => typeof type === 'string' && isReportType(type))) throw bad('range.reportTypes', 'a list of report types');
  return { reportDate, since, expected, range: { from, to, portfolios: portfolios as number[], reportTypes: reportTypes as ReportType[] } };
}

/** The value at a dotted path, for the error message. */
function pick(value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((at, key) => (typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined), value);
}
