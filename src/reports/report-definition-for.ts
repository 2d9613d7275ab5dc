import { constituentReport } from './constituent-report.js';
import { indexReport } from './index-report.js';
import type { ReportDefinition } from './report-definition.js';
import type { ReportType } from './report-types.js';

/** The table definition that holds a report type's rows. */
export function reportDefinitionFor(reportType: ReportType): ReportDefinition {
  return reportType === 'index' ? indexReport : constituentReport;
}

/** Every report table, once each. */
export const REPORT_DEFINITIONS: readonly ReportDefinition[] = [indexReport, constituentReport];
