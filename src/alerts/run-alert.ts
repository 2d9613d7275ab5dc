import type { RunReport } from '../runner/run-report.js';
import type { AlertSummary } from './alert-summary.js';

/**
 * The alert for a run, a night or a waited backfill; undefined when every slice loaded without a
 * warning or was no_data (a slice that succeeded on retry is not an alert). Warnings are told once,
 * grouped by check and portfolio with the values measured, never one message per slice.
 */
export function runAlert(kind: AlertSummary['kind'], what: string, report: RunReport): AlertSummary | undefined {
  const warned = report.warned > 0;
  if (report.failed === 0 && report.notAttempted === 0 && !report.stoppedBy && !warned) return undefined;
  const problems: string[] = [];
  if (report.failed > 0 || report.notAttempted > 0 || report.stoppedBy) problems.push(`${report.failed} of ${report.planned} slices failed`);
  if (report.notAttempted > 0) problems.push(`${report.notAttempted} not attempted`);
  if (warned) problems.push(`${report.warned}${problems.length > 0 ? '' : ` of ${report.planned}`} slice${report.warned === 1 ? '' : 's'} loaded with warnings`);
  const details: string[] = [];
  if (report.notAttemptedReason) details.push(`Not attempted: ${report.notAttemptedReason}`);
  if (report.stoppedBy) details.push(`Stopped early: ${report.stoppedBy.message}`);
  if (report.interrupted) details.push('Interrupted before every slice was attempted.');
  return {
    kind,
    title: `${what}: ${problems.join(', ')}`,
    counts: {
      loaded: report.loaded,
      ...(warned ? { warned: report.warned } : {}),
      unchanged: report.unchanged,
      noData: report.noData,
      failed: report.failed,
      notAttempted: report.notAttempted,
    },
    failures: report.failures,
    ...(warned ? { warnings: report.warnings } : {}),
    details,
    retryCommand: report.retryCommand,
    at: new Date(),
  };
}
