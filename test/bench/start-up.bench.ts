import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI_BIN } from '../helpers/cli-bin.js';
import type { BenchResult, BenchSize, Benchmark } from './bench-result.js';
import { type MeasuredChild, runMeasuredChild } from './run-measured-child.js';
import { seedSqliteLedger } from './seed-sqlite-ledger.js';

const SOURCE_BIN = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url));
// tsx's loader by path: `--import tsx` would be looked up from the measured command's working directory.
const TSX_LOADER = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
const WEEK = { from: '2024-03-04', to: '2024-03-10' };

/**
 * 6. Start-up: what a user waits for before a command does anything, and what it holds. The
 * compiled command (`dist/`, as published) against the same sources loaded through tsx at run
 * time (how every command started before the build), each the median of a few runs, in one
 * process run. The big-slice benchmark's peak RSS includes this start-up memory too.
 */
export const benchmark: Benchmark = {
  name: 'start-up',
  order: 6,
  async run(size: BenchSize): Promise<BenchResult[]> {
    const runs = size === 'smoke' ? 1 : 9;
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-start-up-'));
    try {
      const env = { DATABASE_URL: `sqlite:${join(dir, 'warehouse.sqlite')}`, HOME: dir };
      await seedSqliteLedger(join(dir, 'warehouse.sqlite'), { ...WEEK, portfolios: [1001, 1002], reportTypes: ['index', 'constituent.close'] }, 10);
      const statusArgs = ['status', '--from', WEEK.from, '--to', WEEK.to];

      const helpCompiled = await medianOf(runs, () => runMeasuredChild([CLI_BIN, '--help'], { cwd: dir, env }));
      const helpTsx = await medianOf(runs, () => runMeasuredChild(['--import', TSX_LOADER, SOURCE_BIN, '--help'], { cwd: dir, env }));
      const statusCompiled = await medianOf(runs, () => runMeasuredChild([CLI_BIN, ...statusArgs], { cwd: dir, env }));
      const statusTsx = await medianOf(runs, () => runMeasuredChild(['--import', TSX_LOADER, SOURCE_BIN, ...statusArgs], { cwd: dir, env }));

      const note = `median of ${runs} runs each, spawn to exit; baseline: the same sources through tsx at run time`;
      return [
        {
          benchmark: `start-up: report-sync --help, wall time (${note})`,
          product: seconds(helpCompiled.wallMs),
          baseline: `${seconds(helpTsx.wallMs)} (tsx)`,
          ratio: helpCompiled.wallMs / helpTsx.wallMs,
          target: '≤ 0.3 s',
          pass: helpCompiled.wallMs <= 300,
          facts: { nonZeroExits: exits(helpCompiled, helpTsx) },
        },
        {
          benchmark: "start-up: report-sync --help, peak RSS (the process's own, at exit)",
          product: megabytes(helpCompiled.peakRssBytes),
          baseline: `${megabytes(helpTsx.peakRssBytes)} (tsx)`,
          ratio: helpCompiled.peakRssBytes / helpTsx.peakRssBytes,
          target: '≤ 65 MB',
          pass: helpCompiled.peakRssBytes <= 65 * 1e6,
          facts: { nonZeroExits: exits(helpCompiled, helpTsx) },
        },
        {
          benchmark: `start-up: report-sync status over a week (2 portfolios × 2 report types × 7 days, SQLite; peak RSS ${megabytes(statusCompiled.peakRssBytes)}, tsx ${megabytes(statusTsx.peakRssBytes)})`,
          product: seconds(statusCompiled.wallMs),
          baseline: `${seconds(statusTsx.wallMs)} (tsx)`,
          ratio: statusCompiled.wallMs / statusTsx.wallMs,
          target: '≤ 0.6 s',
          pass: statusCompiled.wallMs <= 600 && statusCompiled.code === 0,
          facts: { nonZeroExits: exits(statusCompiled, statusTsx) },
        },
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/** Runs `measure` `runs` times one after the other; the run of median wall time (its RSS with it). */
async function medianOf(runs: number, measure: () => Promise<MeasuredChild>): Promise<MeasuredChild> {
  const results: MeasuredChild[] = [];
  for (let i = 0; i < runs; i += 1) {
    const result = await measure();
    if (result.code !== 0) throw new Error(`start-up benchmark: a command exited ${result.code}: ${result.stderr}`);
    results.push(result);
  }
  results.sort((a, b) => a.wallMs - b.wallMs);
  const median = results[Math.floor(results.length / 2)]!;
  // Peak RSS barely varies; the worst is the honest figure.
  return { ...median, peakRssBytes: Math.max(...results.map((result) => result.peakRssBytes)) };
}

/** How many of the commands exited with a code other than 0. */
function exits(...runs: readonly MeasuredChild[]): number {
  return runs.filter((run) => run.code !== 0).length;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function megabytes(bytes: number): string {
  return `${Math.round(bytes / 1e6)} MB`;
}
