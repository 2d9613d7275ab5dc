import { buildCoverageGrid, choosePeriod } from '../coverage/coverage-grid.js';
import { countIsoDates, shiftIsoDate } from '../dates/report-date.js';
import { Ledger, type LedgerFilter, type LedgerPeriodCount, type SliceCheckEntry } from '../warehouse/ledger/ledger.js';
import type { LedgerPeriod } from '../warehouse/engine/ledger-period.js';
import type { ReportType } from '../reports/report-types.js';
import { rangeWindows, type SliceRange } from '../slice/slice-range.js';
import { retryCommand } from '../outcomes/retry-command.js';
import { shellQuote } from '../text/shell-quote.js';
import type { FailureSummary } from '../outcomes/failure-groups.js';
import { formatFailures } from './format-failures.js';
import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import { loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { formatCoverageGrid } from './format-coverage-grid.js';
import { formatTable } from './format-table.js';
import { resolveRange, type RangeOptions } from './resolve-range.js';
import { countOf } from '../text/count-of.js';

export interface StatusOptions extends CommonOptions, RangeOptions {
  readonly json?: boolean;
  /** Only the failed slices: grouped by code and portfolio, or every one of them with `json`. */
  readonly failed?: boolean;
  /** Only failures with these error codes (implies `failed`). */
  readonly code?: readonly string[];
}

interface PairStatus {
  portfolioId: number;
  reportType: string;
  loaded: number;
  noData: number;
  failed: number;
  missing: number;
  /** Of `loaded`: slices whose latest file missed a data-quality check set to `warn` (loaded with warnings). */
  warned: number;
}

const FAILED_LISTED = 1000;

/** Pairs the text's table and grid show; past it, those in most trouble ({@link worstPairs}) and a line for the rest. `--json` lists every pair. */
const PAIRS_LISTED = 100;

/** Missed data-quality checks listed under the grid; `--json` lists up to {@link FAILED_LISTED}. */
const CHECK_MISSES_LISTED = 20;

/**
 * `report-sync status`: per portfolio and report type, the range's slices by outcome (missing =
 * never attempted; loaded ones with warnings counted too), the coverage grid, then the failures
 * with their reasons. On a damaged warehouse it still shows the ledger, warning on stderr.
 */
export async function statusCommand(options: StatusOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const { settings } = config;
  const { from, to } = resolveRange(options, settings, (last) => shiftIsoDate(last, -settings.schedule.lookbackDays));
  const days = countIsoDates(from, to);

  const warehouse = await connectWarehouse(config, { purpose: 'read', signal: io.signal });
  try {
    // A damaged warehouse is said, not a reason to hide the ledger it still has.
    for (const damage of warehouse.damage) io.stderr.write(`report-sync: warning: ${damage}\n`);
    const ledger = new Ledger(warehouse);
    const filter = { from, to, portfolios: options.portfolios, reportTypes: options.reportTypes };
    if (options.failed || options.code?.length) {
      const range = { ...filter, portfolios: options.portfolios ?? settings.portfolios, reportTypes: options.reportTypes ?? settings.reportTypes };
      await printFailed(io, { ledger, filter: { ...filter, errorCodes: options.code }, range, location: warehouse.location }, options);
      return 0;
    }
    const counts = await ledger.countByStatus(filter);
    const failed = await ledger.entries(filter, { status: 'failed', limit: FAILED_LISTED });
    const checks = await readCheckMisses(ledger, filter, options.json ? FAILED_LISTED : CHECK_MISSES_LISTED, io);
    // A warehouse without slice_checks was said above: it has no warnings to count.
    const warned = await ledger.countWarned(filter).catch(() => []);

    // The configured pairs always show (a pair with nothing loaded is all missing); pairs the
    // ledger knows beyond them show too, unless flags narrowed the question.
    const pairs = new Map<string, PairStatus>();
    const pair = (portfolioId: number, reportType: string): PairStatus => {
      const key = `${portfolioId}\u0000${reportType}`;
      let status = pairs.get(key);
      if (!status) {
        status = { portfolioId, reportType, loaded: 0, noData: 0, failed: 0, missing: days, warned: 0 };
        pairs.set(key, status);
      }
      return status;
    };
    for (const portfolioId of options.portfolios ?? settings.portfolios) {
      for (const reportType of options.reportTypes ?? settings.reportTypes) pair(portfolioId, reportType);
    }
    for (const count of counts) {
      const status = pair(count.portfolioId, count.reportType);
      if (count.status === 'loaded') status.loaded += count.slices;
      else if (count.status === 'no_data') status.noData += count.slices;
      else status.failed += count.slices;
      status.missing -= count.slices;
    }
    for (const count of warned) pair(count.portfolioId, count.reportType).warned += count.slices;
    const rows = [...pairs.values()].sort((a, b) => a.portfolioId - b.portfolioId || a.reportType.localeCompare(b.reportType));

    if (options.json) {
      io.stdout.write(
        `${JSON.stringify(
          {
            from,
            to,
            days,
            warehouse: warehouse.location,
            pairs: rows,
            failed: failed.map((entry) => ({
              portfolioId: entry.portfolio_id,
              reportType: entry.report_type,
              reportDate: entry.report_date,
              attempts: entry.attempts,
              error: entry.error,
              updatedAt: entry.updated_at,
            })),
            checks,
          },
          null,
          2,
        )}\n`,
      );
      return 0;
    }

    // Past PAIRS_LISTED pairs, the table and the grid show the pairs in most trouble and sum the
    // rest: thousands of lines are read by no one, and their grid is every pair's every month.
    const listed = rows.length > PAIRS_LISTED ? worstPairs(rows, PAIRS_LISTED) : rows;
    const period = gridPeriod(from, to, labelWidthOf(listed), io);
    const grid = buildCoverageGrid({ from, to, period, pairs: listed, counts: await countListed(ledger, { filter, period, listed, narrowed: listed !== rows }) });
    const colour = Boolean(io.stdout.isTTY) && !config.env.NO_COLOR;
    const lines = [
      `Slices from ${from} to ${to} (${countOf(days, 'day')}) in ${warehouse.location}:`,
      '',
      formatTable(
        ['portfolio', 'report type', 'loaded', 'no_data', 'failed', 'missing', 'loaded with warnings'],
        listed.map((row) => [row.portfolioId, row.reportType, row.loaded, row.noData, row.failed, row.missing, row.warned]),
      ),
    ];
    if (listed !== rows) lines.push(otherPairsLine(rows, listed, filter, options));
    lines.push('', formatCoverageGrid(grid, { colour }));
    // Failures grouped under the grid: a thousand slices of one forbidden portfolio are one line.
    const summary = await ledger.failureSummary(filter);
    if (summary.total > 0) lines.push('', ...failureLines(summary, filter, options));
    if (checks.total > 0) lines.push('', ...checkMissLines(checks, filter));
    io.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  } finally {
    await warehouse.close();
  }
}

/** Where `status --failed` reads the failed slices from. */
interface FailedSlices {
  readonly ledger: Ledger;
  /** The range, portfolios, report types and --code asked for. */
  readonly filter: LedgerFilter;
  /** The same range, walked a month at a time for --json. */
  readonly range: SliceRange;
  /** Where the warehouse is, as the user named it. */
  readonly location: string;
}

/**
 * `status --failed [--code …]`: the failed slices only. As text, grouped by error code and
 * portfolio with counts and examples, and the command that retries them; with `--json`, every one
 * of them (read and written a month at a time, so a ten-year ledger never sits in memory).
 */
async function printFailed(io: CliIo, { ledger, filter, range, location }: FailedSlices, options: StatusOptions): Promise<void> {
  const summary = await ledger.failureSummary(filter);
  if (options.json) {
    io.stdout.write(`{"from":${JSON.stringify(filter.from)},"to":${JSON.stringify(filter.to)},"warehouse":${JSON.stringify(location)},`);
    io.stdout.write(
      `"total":${summary.total},"groups":${JSON.stringify(summary.groups.map((group) => ({ code: group.code, portfolioId: group.portfolioId, slices: group.slices })))},"failed":[`,
    );
    let first = true;
    for (const window of rangeWindows(range)) {
      for (const entry of await ledger.entries({ ...filter, from: window.from, to: window.to }, { status: 'failed' })) {
        const item = {
          portfolioId: entry.portfolio_id,
          reportType: entry.report_type,
          reportDate: entry.report_date,
          attempts: entry.attempts,
          error: entry.error,
          updatedAt: entry.updated_at,
        };
        io.stdout.write(`${first ? '' : ','}\n  ${JSON.stringify(item)}`);
        first = false;
      }
    }
    io.stdout.write('\n]}\n');
    return;
  }
  const codes = filter.errorCodes?.length ? ` with code ${filter.errorCodes.join(' or ')}` : '';
  if (summary.total === 0) {
    io.stdout.write(`No failed slices${codes} from ${filter.from} to ${filter.to} in ${location}.\n`);
    return;
  }
  const lines = [`Failed slices${codes} from ${filter.from} to ${filter.to} in ${location}:`, '', ...failureLines(summary, filter, options)];
  io.stdout.write(`${lines.join('\n')}\n`);
}

/** The failures grouped by code and portfolio, the command that retries them, and the one that lists every one. */
function failureLines(summary: FailureSummary, filter: LedgerFilter, options: StatusOptions): string[] {
  const codes = filter.errorCodes?.length ? ` --code ${filter.errorCodes.join(',')}` : '';
  const lines = formatFailures(summary);
  if (summary.span) lines.push('', `Retry them: ${retryCommand('run', summary.span, options.config)}`);
  lines.push(
    `Every one of them: report-sync status --failed --json --from ${filter.from} --to ${filter.to}${codes}${options.config ? ` --config ${shellQuote(options.config)}` : ''}`,
  );
  return lines;
}

/**
 * The data-quality checks the latest files of the range missed (`warn`: loaded with the warning;
 * `fail`: refused, the slice failed). A warehouse not yet migrated to hold them has none to show:
 * said once on stderr, as damage is.
 */
async function readCheckMisses(ledger: Ledger, filter: LedgerFilter, limit: number, io: CliIo): Promise<{ total: number; misses: SliceCheckEntry[] }> {
  try {
    return await ledger.checkMisses(filter, limit);
  } catch (error) {
    io.stderr.write(`report-sync: warning: ${(error as Error).message}\n`);
    return { total: 0, misses: [] };
  }
}

/** One line per missed check: the slice, the outcome and what was found. */
function checkMissLines(checks: { total: number; misses: readonly SliceCheckEntry[] }, filter: LedgerFilter): string[] {
  const lines = [`Data-quality checks missed (${checks.total}; warn: loaded with the warning, fail: refused, the slice keeps its earlier rows):`];
  for (const miss of checks.misses) lines.push(`  ${miss.outcome.padEnd(4)}  ${miss.portfolioId} ${miss.reportType} ${miss.reportDate}  ${miss.message}`);
  if (checks.total > checks.misses.length) {
    lines.push(`  … ${checks.total - checks.misses.length} more: report-sync status --json --from ${filter.from} --to ${filter.to} (its "checks")`);
  }
  return lines;
}

/** The widest of the grid's row labels. */
function labelWidthOf(pairs: readonly { portfolioId: number; reportType: string }[]): number {
  let width = 0;
  for (const pair of pairs) width = Math.max(width, `${pair.portfolioId}  ${pair.reportType}`.length);
  return width;
}

/** The grid's period: the finest that fits the terminal's width (80 columns when not a terminal, so piped output is stable) beside the labels. */
function gridPeriod(from: string, to: string, labelWidth: number, io: CliIo): LedgerPeriod {
  const width = (io.stdout as { columns?: number }).columns ?? 80;
  return choosePeriod(from, to, Math.max(20, width - labelWidth - 2));
}

/**
 * The `limit` pairs in most trouble: most failed slices, then most missing, then in pair order
 * (as the full table is), so the same ledger always lists the same pairs in the same order.
 */
function worstPairs<T extends { portfolioId: number; reportType: string; failed: number; missing: number }>(rows: readonly T[], limit: number): T[] {
  return [...rows].sort((a, b) => b.failed - a.failed || b.missing - a.missing || a.portfolioId - b.portfolioId || a.reportType.localeCompare(b.reportType)).slice(0, limit);
}

/** The grid's counts of the listed pairs: when they are a few of many, only their portfolios and report types are asked. */
async function countListed(
  ledger: Ledger,
  { filter, period, listed, narrowed }: { filter: LedgerFilter; period: LedgerPeriod; listed: readonly PairStatus[]; narrowed: boolean },
): Promise<LedgerPeriodCount[]> {
  if (!narrowed) return ledger.countByPeriod(filter, period);
  const keys = new Set(listed.map((pair) => `${pair.portfolioId}\u0000${pair.reportType}`));
  const portfolios = [...new Set(listed.map((pair) => pair.portfolioId))];
  const reportTypes = [...new Set(listed.map((pair) => pair.reportType as ReportType))];
  const counts = await ledger.countByPeriod({ ...filter, portfolios, reportTypes }, period);
  return counts.filter((count) => keys.has(`${count.portfolioId}\u0000${count.reportType}`));
}

/** The pairs left out of the table, summed in one line, and how to see them. */
function otherPairsLine(rows: readonly PairStatus[], listed: readonly PairStatus[], filter: LedgerFilter, options: StatusOptions): string {
  const shown = new Set(listed);
  const sum = { loaded: 0, noData: 0, failed: 0, missing: 0, warned: 0 };
  for (const row of rows) {
    if (shown.has(row)) continue;
    sum.loaded += row.loaded;
    sum.noData += row.noData;
    sum.failed += row.failed;
    sum.missing += row.missing;
    sum.warned += row.warned;
  }
  const config = options.config ? ` --config ${shellQuote(options.config)}` : '';
  return (
    `… and ${countOf(rows.length - listed.length, 'more pair')}: loaded ${sum.loaded}, no_data ${sum.noData}, failed ${sum.failed}, missing ${sum.missing}, loaded with warnings ${sum.warned}` +
    ` (every pair: report-sync status --json --from ${filter.from} --to ${filter.to}${config}, or narrow with --portfolios)`
  );
}
