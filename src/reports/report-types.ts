/** The reportType values the export endpoint accepts, exactly as the spec lists them. */
export const REPORT_TYPES = [
  'index',
  'constituent.close',
  'constituent.open',
  'constituent.proforma',
  'constituent.corporateactions',
  'constituent.proformacorporateactions',
] as const;

export type ReportType = (typeof REPORT_TYPES)[number];

/** The two file formats of the export endpoint: `json` (a JSON array) and `csv` (a ZIP holding one CSV). */
export const EXPORT_FORMATS = ['json', 'csv'] as const;

export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export function isReportType(value: string): value is ReportType {
  return (REPORT_TYPES as readonly string[]).includes(value);
}
