import { printableText } from '../text/printable-text.js';
import { describeMeasured, type WarningGroup, type WarningSummary } from '../outcomes/warning-groups.js';
import { REASON_LENGTH } from './format-failures.js';
import { countOf } from '../text/count-of.js';

/** Checks shown; the rest are counted in one line. */
const CHECKS_SHOWN = 12;
/** Portfolios shown per check; the rest are counted in one line. */
const PORTFOLIOS_SHOWN = 6;

/**
 * The slices loaded with warnings, grouped by check, then portfolio, with counts, the values
 * measured against the limit, a few of the slices and what the check found, once per group; laid
 * out as the failures are (see `formatFailures`).
 */
export function formatWarnings(warnings: WarningSummary): string[] {
  if (warnings.slices === 0) return [];
  const checks = new Map<string, WarningGroup[]>();
  for (const group of warnings.groups) checks.set(group.check, [...(checks.get(group.check) ?? []), group]);
  const lines = [`Loaded with warnings, by data-quality check and portfolio (${countOf(warnings.slices, 'slice')}; the rows are loaded, the warnings recorded in slice_checks):`];
  let checksShown = 0;
  for (const [check, groups] of checks) {
    if (checksShown === CHECKS_SHOWN) {
      lines.push(`  … ${checks.size - CHECKS_SHOWN} more checks`);
      break;
    }
    checksShown += 1;
    lines.push(`  ${check}: ${countOf(sum(groups), 'slice')}`);
    for (const group of groups.slice(0, PORTFOLIOS_SHOWN)) {
      const examples = group.examples.map((example) => `${example.slice.reportType} ${example.slice.reportDate}`).join(', ');
      lines.push(`    portfolio ${group.portfolioId}: ${countOf(group.slices, 'slice')}, ${describeMeasured(group)}${examples ? `, e.g. ${examples}` : ''}`);
      const first = group.examples[0];
      if (first) lines.push(`      ${printableText(first.message, REASON_LENGTH)}`);
    }
    if (groups.length > PORTFOLIOS_SHOWN) {
      const rest = groups.slice(PORTFOLIOS_SHOWN);
      lines.push(`    … ${rest.length} more portfolios (${countOf(sum(rest), 'slice')})`);
    }
  }
  return lines;
}

function sum(groups: readonly WarningGroup[]): number {
  return groups.reduce((total, group) => total + group.slices, 0);
}
