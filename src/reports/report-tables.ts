import { REPORT_REGISTRY, type RegisteredReport } from './report-registry.js';
import { REPORT_TYPES } from './report-types.js';

/**
 * Every report table's definition, once each, in the order of the first report type it holds
 * (`index_report`, then `constituent_report`): the order of every per-table list and tally.
 */
export const REPORT_TABLES: readonly RegisteredReport[] = [...new Set(REPORT_TYPES.map((type) => REPORT_REGISTRY[type]))];
