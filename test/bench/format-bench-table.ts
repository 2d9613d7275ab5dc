import type { BenchResult } from './bench-result.js';

/** The results as a Markdown table (benchmark, product, baseline, ratio, target, pass). */
export function formatBenchTable(results: readonly BenchResult[]): string {
  const header = ['benchmark', 'product', 'baseline', 'ratio', 'target', 'pass'];
  const rows = results.map((r) => [
    r.note ? `${r.benchmark} (${r.note})` : r.benchmark,
    r.product,
    r.baseline,
    r.ratio === null ? '—' : r.ratio.toFixed(2),
    r.target,
    r.pass ? 'yes' : '**no**',
  ]);
  return [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
