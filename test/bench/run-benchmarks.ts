import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { BenchResult, BenchSize, Benchmark } from './bench-result.js';
import { formatBenchTable } from './format-bench-table.js';

/**
 * `npm run bench [-- --smoke] [--only name,name] [--dialects name,name] [--no-readme]`: every
 * `*.bench.ts` beside this file, in their `order`; `--dialects` keeps only those dialects' rows of
 * a benchmark that measures several. A full run of all of them rewrites the table in
 * docs/performance.md (between the bench markers), with the machine it ran on.
 */
const PERFORMANCE_PAGE = fileURLToPath(new URL('../../docs/performance.md', import.meta.url));
const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

export async function loadBenchmarks(): Promise<Benchmark[]> {
  const dir = fileURLToPath(new URL('.', import.meta.url));
  const files = readdirSync(dir).filter((file) => file.endsWith('.bench.ts'));
  const modules = await Promise.all(files.map((file) => import(new URL(file, import.meta.url).href) as Promise<{ benchmark: Benchmark }>));
  return modules.map((module) => module.benchmark).sort((a, b) => a.order - b.order);
}

export function machineDescription(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${process.platform}`;
}

async function main(argv: string[]): Promise<number> {
  const size: BenchSize = argv.includes('--smoke') ? 'smoke' : 'full';
  const onlyAt = argv.indexOf('--only');
  const only = onlyAt >= 0 ? new Set((argv[onlyAt + 1] ?? '').split(',')) : undefined;
  const dialectsAt = argv.indexOf('--dialects');
  const dialects = dialectsAt >= 0 ? new Set((argv[dialectsAt + 1] ?? '').split(',')) : undefined;
  const all = await loadBenchmarks();
  const chosen = only ? all.filter((bench) => only.has(bench.name)) : all;
  if (only && chosen.length !== only.size) {
    console.error(`unknown benchmark in --only; known: ${all.map((bench) => bench.name).join(', ')}`);
    return 2;
  }

  const results: BenchResult[] = [];
  for (const bench of chosen) {
    console.error(`running ${bench.name} (${size})…`);
    const rows = await bench.run(size, { dialects });
    results.push(...rows);
    console.error(formatBenchTable(rows));
  }
  const table = formatBenchTable(results);
  const machine = machineDescription();
  console.log(`\n${table}\n\nmachine: ${machine}`);

  if (size === 'full' && !only && !dialects && !argv.includes('--no-readme')) {
    const readme = readFileSync(PERFORMANCE_PAGE, 'utf8');
    const start = readme.indexOf(START);
    const end = readme.indexOf(END);
    if (start < 0 || end < start) {
      console.error(`docs/performance.md has no ${START} … ${END} markers; the table was not written there`);
    } else {
      const stamp = `Measured ${new Date().toISOString().slice(0, 10)} on ${machine}.`;
      writeFileSync(PERFORMANCE_PAGE, `${readme.slice(0, start + START.length)}\n${stamp}\n\n${table}\n${readme.slice(end)}`);
      console.error('docs/performance.md table updated');
    }
  }
  return results.every((row) => row.pass) ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
