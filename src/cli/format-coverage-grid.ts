import type { CoverageGrid, CoverageOutcome } from '../coverage/coverage-grid.js';

/** One character per outcome, legible without colour. */
const MARKS: Record<CoverageOutcome, string> = { loaded: '█', no_data: '░', failed: '✗', missing: '·' };
/** ANSI colours per outcome, when the output is a terminal that wants them. */
const COLOURS: Record<CoverageOutcome, string> = { loaded: '\u001b[32m', no_data: '\u001b[36m', failed: '\u001b[31m', missing: '\u001b[2m' };
const RESET = '\u001b[0m';

const PERIOD_WORDS = { day: 'day', week: 'week (Monday to Sunday)', month: 'month' } as const;

/**
 * The coverage grid as terminal lines: one row per portfolio and report type, one character per
 * day, week or month (a failed or missing slice inside it wins, then loaded, then no data), the
 * range's dates over the cells, and a legend. Colour only when `colour` (a terminal, no NO_COLOR).
 */
export function formatCoverageGrid(grid: CoverageGrid, options: { readonly colour: boolean }): string {
  const labels = grid.rows.map((row) => `${row.portfolioId}  ${row.reportType}`);
  const labelWidth = Math.max(0, ...labels.map((label) => label.length));
  const columns = grid.rows[0]?.cells.length ?? 0;
  const lines = [`Coverage from ${grid.from} to ${grid.to}, one column per ${PERIOD_WORDS[grid.period]}:`];
  const ruler = columns >= grid.from.length + grid.to.length + 1 ? `${grid.from}${' '.repeat(columns - grid.from.length - grid.to.length)}${grid.to}` : grid.from;
  lines.push(`${' '.repeat(labelWidth)}  ${ruler}`);
  grid.rows.forEach((row, i) => {
    let previous: CoverageOutcome | undefined;
    let cells = '';
    for (const cell of row.cells) {
      // One colour code per run of equal cells keeps a ten-year line short.
      if (options.colour && cell.worst !== previous) cells += COLOURS[cell.worst];
      cells += MARKS[cell.worst];
      previous = cell.worst;
    }
    if (options.colour && previous !== undefined) cells += RESET;
    lines.push(`${labels[i]!.padEnd(labelWidth)}  ${cells}`);
  });
  const legend = (['loaded', 'no_data', 'failed', 'missing'] as const).map((outcome) => {
    const mark = options.colour ? `${COLOURS[outcome]}${MARKS[outcome]}${RESET}` : MARKS[outcome];
    return `${mark} ${LEGEND_WORDS[outcome]}`;
  });
  const aggregate = 'Each column shows the worst trouble inside it (failed, then missing), else loaded; no data only if nothing in it was loaded: ';
  lines.push(`${grid.period === 'day' ? '' : aggregate}${legend.join('  ')}`);
  return lines.join('\n');
}

const LEGEND_WORDS: Record<CoverageOutcome, string> = { loaded: 'loaded', no_data: 'no data', failed: 'failed', missing: 'missing' };
