import type { RunReport } from '../runner/run-report.js';
import { printableText } from '../text/printable-text.js';
import { formatFailures } from './format-failures.js';
import { formatTable } from './format-table.js';
import { formatWarnings } from './format-warnings.js';
import { countOf } from '../text/count-of.js';

/**
 * The end-of-run summary: slices by outcome (loaded-with-warnings counted as loaded and again
 * beside it), rows written per table (none for an unchanged file), failures by code and
 * portfolio, warnings by check and portfolio, and the command that retries the failures.
 */
export function formatRunSummary(report: RunReport): string {
  const seconds = (report.durationMs / 1000).toFixed(1);
  const parts = [
    `Run finished in ${seconds} s: ${countOf(report.planned, 'slice')} planned, ${countOf(report.retries, 'retry', 'retries')}.`,
    '',
    formatTable(
      ['outcome', 'slices'],
      [
        ['loaded', report.loaded],
        ['  of which unchanged', report.unchanged],
        ['  of which loaded with warnings', report.warned],
        ['no_data', report.noData],
        ['failed', report.failed],
        ['not attempted', report.notAttempted],
      ],
    ),
    '',
    formatTable(
      ['table', 'rows written'],
      Object.entries(report.rowsWritten).map(([table, written]) => [table, written]),
    ),
  ];
  if (report.planned > 0 && report.unchanged + report.noDataAgain === report.planned) {
    parts.push('', `Nothing needed doing: every slice was as before (${report.unchanged} loaded from the same file, ${report.noDataAgain} still without data).`);
  }
  const failures = formatFailures(report.failures);
  if (failures.length > 0) parts.push('', ...failures);
  if (report.notAttempted > 0 && report.notAttemptedReason) parts.push('', `Not attempted: ${report.notAttemptedReason}`);
  if (report.stoppedBy) parts.push('', `Stopped early: ${printableText(report.stoppedBy.message, 600)}`);
  if (report.interrupted) parts.push('', 'Interrupted: slices not attempted keep their earlier state; run again to finish.');
  if (report.retryCommand && (report.failed > 0 || report.notAttempted > 0)) parts.push('', `Retry them: ${report.retryCommand}`);
  // The examples above are a few per group; the ledger has every one.
  const span = report.failures.span;
  if (span) parts.push(`Every failed slice: report-sync status --failed --json --from ${span.from} --to ${span.to}`);
  const warnings = formatWarnings(report.warnings);
  if (warnings.length > 0) parts.push('', ...warnings);
  return `${parts.join('\n')}\n`;
}
