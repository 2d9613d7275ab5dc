import { alertWebhookFromEnvironment } from '../alerts/alert-webhook.js';
import { checkFreshness, type FreshnessResult } from '../check/freshness-check.js';
import { nightDueAt } from '../check/night-due.js';
import { checkPlausibleDate } from '../dates/plausible-date.js';
import { shiftIsoDate, todayIn } from '../dates/report-date.js';
import { retryCommand } from '../outcomes/retry-command.js';
import { describeSlice } from '../slice/slice.js';
import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import { Ledger, type MonthlyCountDifference, type SliceCheckEntry } from '../warehouse/ledger/ledger.js';
import type { MonthlyTotalDifference } from '../warehouse/ledger/monthly-totals.js';
import { rowCountDifferences, type RowCountDifference } from '../warehouse/ledger/row-count-differences.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { formatFailures } from './format-failures.js';
import type { ReportType } from '../reports/report-types.js';
import type { SliceRange } from '../slice/slice-range.js';
import { countOf } from '../text/count-of.js';

export interface CheckOptions extends CommonOptions {
  /** The last day expected, YYYY-MM-DD. @defaultValue yesterday in schedule.timeZone */
  readonly date?: string;
  /** Days expected, ending with `date`. @defaultValue 1 */
  readonly days?: number;
  /** Hours after the night's cron time during which its missing slices are pending, not failed. */
  readonly grace?: number;
  readonly portfolios?: number[];
  readonly reportTypes?: ReportType[];
  /** Also compare every slice's ledger row count with the rows its table holds, and the monthly counts (and MySQL's totals of them) with the ledger. */
  readonly deep?: boolean;
  readonly json?: boolean;
  /** Commander's `--no-alert`: false when given. */
  readonly alert?: boolean;
}

/** Row-count differences listed by name; the rest are counted. */
const DIFFERENCES_LISTED = 50;

/** What `--deep` found beside the freshness result. */
interface DeepFindings {
  /** The slices whose row counts differ from their ledger rows. */
  readonly differences: readonly RowCountDifference[];
  /** Where the monthly counts (`report_loads_monthly`) differ from the ledger. */
  readonly monthly: readonly MonthlyCountDifference[];
  /** Where MySQL's monthly totals (`report_loads_monthly_totals`) differ from the monthly counts. */
  readonly totals: readonly MonthlyTotalDifference[];
}

/**
 * `report-sync check`: exits 0 when every expected slice is `loaded` or `no_data` (or only last
 * night's are missing within its grace), 1 otherwise, saying what is missing or failed. Read-only:
 * it never creates or migrates a warehouse. Sends the alert on failure when a webhook is set.
 */
export async function checkCommand(options: CheckOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const { settings } = config;
  const { schedule } = settings;
  const to = options.date ?? shiftIsoDate(todayIn(schedule.timeZone), -1);
  const range: SliceRange = {
    from: shiftIsoDate(to, -((options.days ?? 1) - 1)),
    to,
    portfolios: options.portfolios ?? settings.portfolios,
    reportTypes: options.reportTypes ?? settings.reportTypes,
  };
  const window = { earliest: settings.dates.earliest, timeZone: schedule.timeZone };
  checkPlausibleDate(range.to, '--date', window);
  // A --days reaching back centuries would count (and list) every slice of them.
  if (range.from !== range.to) checkPlausibleDate(range.from, `the first day of --days ${options.days},`, window);
  const graceHours = options.grace ?? schedule.graceHours;
  const graceUntil = new Date(nightDueAt(to, schedule.cron, schedule.timeZone).getTime() + graceHours * 3_600_000);
  const logger = createCliLogger(config, io, { progressBar: false });
  const webhook = options.alert === false ? undefined : alertWebhookFromEnvironment(config.env, { logger, signal: io.signal });
  const warehouse = await connectWarehouse(config, { purpose: 'read', signal: io.signal });
  try {
    // A damaged warehouse is said, not a reason to hide the ledger it still has.
    for (const damage of warehouse.damage) io.stderr.write(`report-sync: warning: ${damage}\n`);
    const ledger = new Ledger(warehouse);
    const result = await checkFreshness({ ledger, range, graceUntil });
    const checks = await readCheckMisses(ledger, range, io);
    // Loaded with warnings is loaded (the exit code is the same); counted so it is seen. A warehouse without slice_checks was said above.
    const warned = (await ledger.countWarned(range).catch(() => [])).reduce((total, count) => total + count.slices, 0);
    const deep: DeepFindings | undefined = options.deep
      ? { differences: await rowCountDifferences(warehouse.db, range), monthly: await ledger.monthlyCountDifferences(range), totals: await ledger.monthlyTotalDifferences(range) }
      : undefined;
    const failing = result.status === 'failed' || (deep !== undefined && deep.differences.length + deep.monthly.length + deep.totals.length > 0);
    const retry = retrySpan(result);
    if (options.json) {
      const found = deep && { rowCountDifferences: deep.differences, monthlyCountDifferences: deep.monthly, monthlyTotalDifferences: deep.totals };
      io.stdout.write(
        `${JSON.stringify({ ...result, warned, warehouse: warehouse.location, checks, ...found, retryCommand: retry && retryCommand('run', retry, options.config) }, null, 2)}\n`,
      );
    } else {
      io.stdout.write(`${[...formatCheck(result, { warned, location: warehouse.location, deep, configFile: options.config }), ...checkLines(checks)].join('\n')}\n`);
    }
    if (failing && webhook) {
      await webhook.send({
        kind: 'check',
        title: `report-sync check of ${range.from === range.to ? range.to : `${range.from} to ${range.to}`}: ${headline(result, deep)}`,
        counts: { loaded: result.loaded, ...(warned > 0 ? { warned } : {}), noData: result.noData, failed: result.failed, missing: result.missing },
        failures: result.failures,
        details: [...missingLines(result), ...differenceLines(deep?.differences ?? []), ...monthlyLines(deep?.monthly ?? []), ...totalLines(deep?.totals ?? [])].slice(0, 20),
        retryCommand: retry && retryCommand('backfill', retry, options.config),
        at: new Date(),
      });
    }
    return failing ? 1 : 0;
  } finally {
    await webhook?.close();
    await warehouse.close();
  }
}

/** What a retry has to cover: the failed and the missing slices. */
function retrySpan(result: FreshnessResult): SliceRange | undefined {
  if (result.failed === 0 && result.missing === 0) return undefined;
  if (result.missing === 0 && result.failures.span) return result.failures.span;
  return result.range;
}

function headline(result: FreshnessResult, deep: DeepFindings | undefined): string {
  const parts: string[] = [];
  if (result.missing > 0) parts.push(`${result.missing} of ${result.expected} slices have no outcome${result.status === 'pending' ? ' yet' : ' (did the night run?)'}`);
  if (result.failed > 0) parts.push(`${result.failed} failed`);
  if (deep && deep.differences.length > 0) parts.push(`${deep.differences.length} hold other row counts than the ledger says`);
  if (deep && deep.monthly.length > 0) parts.push(`the monthly counts differ from the ledger in ${countOf(deep.monthly.length, 'place')}`);
  if (deep && deep.totals.length > 0) parts.push(`the monthly totals differ from the monthly counts in ${countOf(deep.totals.length, 'place')}`);
  return parts.length > 0 ? parts.join(', ') : `all ${countOf(result.expected, 'slice')} loaded or no_data`;
}

/** What the printed check adds to the freshness result. */
interface CheckExtras {
  /** Loaded slices whose file missed a check set to `warn`. */
  readonly warned: number;
  /** Where the warehouse is, as the user named it. */
  readonly location: string;
  /** What --deep found; undefined without it. */
  readonly deep: DeepFindings | undefined;
  /** The --config file, repeated in the retry commands. */
  readonly configFile: string | undefined;
}

function formatCheck(result: FreshnessResult, { warned, location, deep, configFile }: CheckExtras): string[] {
  const { range } = result;
  const days = range.from === range.to ? range.to : `${range.from} to ${range.to}`;
  const lines = [
    `Freshness of ${days} (${countOf(result.expected, 'slice')}: ${countOf(range.portfolios.length, 'portfolio')} × ${countOf(range.reportTypes.length, 'report type')}) in ${location}:`,
    `  loaded ${result.loaded}${warned > 0 ? ` (${warned} with warnings)` : ''}, no_data ${result.noData}, failed ${result.failed}, missing ${result.missing}`,
    '',
  ];
  if (result.status === 'ok') lines.push('OK: every slice is loaded or no_data.');
  else if (result.status === 'pending') {
    lines.push(
      `PENDING: the night of ${range.to} may still be running (grace until ${result.graceUntil!.toISOString()}): ${countOf(result.missing, 'slice')} ${result.missing === 1 ? 'has' : 'have'} no outcome yet.`,
    );
  } else lines.push(`FAILED: ${headline(result, undefined)}.`);
  const missing = missingLines(result);
  if (missing.length > 0) lines.push('', 'Missing (no outcome at all):', ...missing.map((line) => `  ${line}`));
  const failures = formatFailures(result.failures);
  if (failures.length > 0) lines.push('', ...failures);
  if (deep) lines.push(...deepLines(deep));
  const retry = retrySpan(result);
  if (retry && result.status === 'failed') {
    lines.push('', `Retry them in this process: ${retryCommand('run', retry, configFile)}`, `or through the workers: ${retryCommand('backfill', retry, configFile)}`);
  }
  return lines;
}

function deepLines({ differences, monthly, totals }: DeepFindings): string[] {
  const lines = [''];
  if (differences.length === 0) lines.push('Row counts: every slice holds the rows its ledger row records.');
  else {
    lines.push(
      `Row counts: ${countOf(differences.length, 'slice')} ${differences.length === 1 ? 'holds' : 'hold'} other row counts than ${differences.length === 1 ? 'its' : 'their'} ledger row records (a plain run of them loads them again):`,
    );
    lines.push(...differenceLines(differences).map((line) => `  ${line}`));
  }
  if (monthly.length > 0) {
    lines.push(
      '',
      `Monthly counts: report_loads_monthly differs from the ledger in ${countOf(monthly.length, 'place')} (changed by hand? rebuild it from the ledger as docs/warehouse.md, "Coverage counts", says):`,
      ...monthlyLines(monthly).map((line) => `  ${line}`),
    );
  }
  if (totals.length > 0) {
    lines.push(
      '',
      `Monthly totals: report_loads_monthly_totals differs from report_loads_monthly in ${countOf(totals.length, 'place')} (changed by hand, or emptied with TRUNCATE? rebuild it as docs/warehouse.md, "Coverage counts", says):`,
      ...totalLines(totals).map((line) => `  ${line}`),
    );
  }
  return lines;
}

function missingLines(result: FreshnessResult): string[] {
  return result.missingGroups.map(
    (group) =>
      `portfolio ${group.portfolioId}, ${group.reportType}: ${group.slices} slice${group.slices === 1 ? '' : 's'} (${group.firstDate === group.lastDate ? group.firstDate : `${group.firstDate} to ${group.lastDate}`})`,
  );
}

function differenceLines(differences: readonly RowCountDifference[]): string[] {
  const lines = differences
    .slice(0, DIFFERENCES_LISTED)
    .map((difference) => `${describeSlice(difference.slice)}: the ledger records ${difference.ledgerRows} rows, the table holds ${difference.tableRows}`);
  if (differences.length > DIFFERENCES_LISTED) lines.push(`… ${differences.length - DIFFERENCES_LISTED} more`);
  return lines;
}

function monthlyLines(monthly: readonly MonthlyCountDifference[]): string[] {
  const lines = monthly
    .slice(0, DIFFERENCES_LISTED)
    .map(
      (difference) =>
        `${difference.month.slice(0, 7)}, portfolio ${difference.portfolioId}, ${difference.reportType}, ${difference.status}: counted ${difference.counted}, the ledger holds ${difference.ledger}`,
    );
  if (monthly.length > DIFFERENCES_LISTED) lines.push(`… ${monthly.length - DIFFERENCES_LISTED} more`);
  return lines;
}

function totalLines(totals: readonly MonthlyTotalDifference[]): string[] {
  const lines = totals
    .slice(0, DIFFERENCES_LISTED)
    .map(
      (difference) =>
        `${difference.month.slice(0, 7)}, ${difference.reportType}, ${difference.status}: totalled ${difference.total}, the monthly counts sum to ${difference.folded}`,
    );
  if (totals.length > DIFFERENCES_LISTED) lines.push(`… ${totals.length - DIFFERENCES_LISTED} more`);
  return lines;
}

/** Missed data-quality checks listed; the rest are counted. */
const CHECK_MISSES_LISTED = 50;

/**
 * The data-quality checks the expected slices' latest files missed. A `fail` already made its slice
 * `failed`; a `warn` is listed without changing the exit code (the data is there; whether it is
 * right is the reader's call). A warehouse not yet migrated to hold them has none: said once.
 */
async function readCheckMisses(ledger: Ledger, range: SliceRange, io: CliIo): Promise<{ total: number; misses: SliceCheckEntry[] }> {
  try {
    return await ledger.checkMisses(range, CHECK_MISSES_LISTED);
  } catch (error) {
    io.stderr.write(`report-sync: warning: ${(error as Error).message}\n`);
    return { total: 0, misses: [] };
  }
}

function checkLines(checks: { total: number; misses: readonly SliceCheckEntry[] }): string[] {
  if (checks.total === 0) return [];
  const lines = ['', `Data-quality checks missed (${checks.total}; warn: loaded, and does not change the exit code; fail: the slice failed, listed above):`];
  for (const miss of checks.misses)
    lines.push(
      `  ${miss.outcome.padEnd(4)}  ${describeSlice({ portfolioId: miss.portfolioId, reportType: miss.reportType as ReportType, reportDate: miss.reportDate })}: ${miss.message}`,
    );
  if (checks.total > checks.misses.length) lines.push(`  … ${checks.total - checks.misses.length} more (report-sync status --json lists them)`);
  return lines;
}
