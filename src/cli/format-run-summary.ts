import type { RunReport } from '../runner/run-report.js';
import { describeSlice } from '../slice.js';
import { formatTable } from './format-table.js';

/** The end-of-run summary: slices by outcome, rows per table, and the failures with their reasons. */
export function formatRunSummary(report: RunReport): string {
  const seconds = (report.durationMs / 1000).toFixed(1);
  const parts = [
    `Run finished in ${seconds} s: ${report.planned} slices planned, ${report.retries} retries.`,
    '',
    formatTable(
      ['outcome', 'slices'],
      [
        ['loaded', report.loaded],
        ['  of which unchanged', report.unchanged],
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
  if (report.failures.length > 0) {
    parts.push('', `Failed slices${report.failed > report.failures.length ? ` (first ${report.failures.length} of ${report.failed})` : ''}:`);
    for (const { slice, error } of report.failures) parts.push(`  ${describeSlice(slice)}: ${error.code}: ${error.message}`);
  }
  if (report.stoppedBy) parts.push('', `Stopped early: ${report.stoppedBy.message}`);
  if (report.interrupted) parts.push('', 'Interrupted: slices not attempted keep their earlier state; run again to finish.');
  return `${parts.join('\n')}\n`;
}
