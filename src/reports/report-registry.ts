import { constituentReport } from './constituent-report.js';
import { indexReport } from './index-report.js';
import type { ReportDefinition } from './report-definition.js';
import type { ReportType } from './report-types.js';

/**
 * The table for each report type's rows. `satisfies` a record of every {@link ReportType}, so a new
 * type does not compile without a definition, and entries keep literal types for the schema.
 * Several types share a table only if it stores `report_type`.
 */
export const REPORT_REGISTRY = {
  index: indexReport,
  'constituent.close': constituentReport,
  'constituent.open': constituentReport,
  'constituent.proforma': constituentReport,
  'constituent.corporateactions': constituentReport,
  'constituent.proformacorporateactions': constituentReport,
} as const satisfies Record<ReportType, ReportDefinition>;

/** The definitions in the registry, each with its literal table name and columns. */
export type RegisteredReport = (typeof REPORT_REGISTRY)[ReportType];

/** The warehouse tables that hold report rows, as the registry names them. */
export type ReportTableName = RegisteredReport['table'];
