import type { FailureSummary } from '../outcomes/failure-groups.js';
import { printableText } from '../text/printable-text.js';
import { countOf } from '../text/count-of.js';

/** Codes shown; the rest are counted in one line. */
const CODES_SHOWN = 12;
/** Longest reason shown, in characters. */
export const REASON_LENGTH = 400;
/** Portfolios shown per code; the rest are counted in one line. */
const PORTFOLIOS_SHOWN = 6;

/**
 * Failures grouped by error code, then portfolio, with counts, the reason once per group and a few
 * of its slices; every line fits a terminal line (control characters from upstream text escaped).
 */
export function formatFailures(failures: FailureSummary): string[] {
  if (failures.total === 0) return [];
  const codes = new Map<string, FailureSummary['groups'][number][]>();
  for (const group of failures.groups) codes.set(group.code, [...(codes.get(group.code) ?? []), group]);
  const lines = [`Failed slices by error code and portfolio (${countOf(failures.total, 'slice')}):`];
  let codesShown = 0;
  for (const [code, groups] of codes) {
    if (codesShown === CODES_SHOWN) {
      const rest = [...codes.values()].slice(CODES_SHOWN).flat();
      lines.push(
        `  … ${codes.size - CODES_SHOWN} more codes (${countOf(
          rest.reduce((sum, group) => sum + group.slices, 0),
          'slice',
        )})`,
      );
      break;
    }
    codesShown += 1;
    lines.push(
      `  ${code}: ${countOf(
        groups.reduce((sum, group) => sum + group.slices, 0),
        'slice',
      )}`,
    );
    for (const group of groups.slice(0, PORTFOLIOS_SHOWN)) {
      const first = group.examples[0];
      lines.push(
        `    portfolio ${group.portfolioId}: ${countOf(group.slices, 'slice')}${first ? `, e.g. ${group.examples.map((example) => `${example.slice.reportType} ${example.slice.reportDate}`).join(', ')}` : ''}`,
      );
      // The reason as the ledger has it (`CODE: what to check`), once per group.
      if (first) lines.push(`      ${printableText(`${code}: ${first.message}`, REASON_LENGTH)}`);
    }
    if (groups.length > PORTFOLIOS_SHOWN) {
      const rest = groups.slice(PORTFOLIOS_SHOWN);
      lines.push(
        `    … ${rest.length} more portfolios (${countOf(
          rest.reduce((sum, group) => sum + group.slices, 0),
          'slice',
        )})`,
      );
    }
  }
  return lines;
}
