import type { RunReport } from '../runner/run-report.js';
import type { AlertSummary } from './alert-summary.js';

/**
 * The alert for a run, a night or a waited backfill, from what its slices did; undefined when
 * there is nothing to say (every slice loaded or no_data: a slice that succeeded on retry is not
 * an alert).
 */
export function runAlert(kind: AlertSummary['kind'], what: string, report: RunReport): AlertSummary | undefined {
  if (report.failed === 0 && report.notAttempted === 0 && !report.stoppedBy) return undefined;
  const problems = [`${report.failed} of ${report.planned} slices failed`];
  if (report.notAttempted > 0) problems.push(`${report.notAttempted} not attempted`);
  const details: string[] = [];
  if (report.notAttemptedReason) details.push(`Not attempted: ${report.notAttemptedReason}`);
  if (report.stoppedBy) details.push(`Stopped early: ${report.stoppedBy.message}`);
  if (report.interrupted) details.push('Interrupted before every slice was attempted.');
  return {
    kind,
    title: `${what}: ${problems.join(', ')}`,
    counts: {
      loaded: report.loaded,
      ...(report.warned ? { warned: report.warned } : {}),
      unchanged: report.unchanged,
      noData: report.noData,
      failed: report.failed,
      notAttempted: report.notAttempted,
    },
    failures: report.failures,
    details,
    retryCommand: report.retryCommand,
    at: new Date(),
  };
}
