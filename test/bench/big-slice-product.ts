import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import { CLI_BIN } from '../helpers/cli-bin.js';
import type { BigSliceSideResult } from './big-slice-side.js';
import { ownPeakRssBytes } from './own-peak-rss.js';
import { runMeasuredChild } from './run-measured-child.js';

/** What the product side is given by the benchmark. */
export interface BigSliceProductInput {
  /** A project directory with config/default.json. */
  readonly cwd: string;
  /** The REPORT_* variables of the simulator and DATABASE_URL. */
  readonly env: Readonly<Record<string, string>>;
  readonly slice: { readonly portfolioId: number; readonly reportType: string; readonly reportDate: string };
}

/**
 * The product side of the big slice: the real `report-sync run` command for that one slice (token,
 * download, spool, ZIP, CSV, row typing, slice loader, ledger), in this process. The time is the
 * one the export job logs for the slice, from its start to its commit, so the process's start-up
 * and the migrations do not count (the raw side has neither).
 */
export async function bigSliceProduct(input: BigSliceProductInput): Promise<BigSliceSideResult> {
  let logs = '';
  const sink = (): Writable =>
    new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        logs += chunk.toString();
        callback();
      },
    });
  const code = await main(runArguments(input), { stdout: sink(), stderr: sink(), env: { ...input.env, LOG_LEVEL: 'info' }, cwd: input.cwd, logDestination: sink() });
  return loadedSlice(code, logs, ownPeakRssBytes() / 2 ** 20);
}

/**
 * {@link bigSliceProduct} as a user runs it: the compiled `report-sync` command (`dist/`) in a
 * process of its own, its peak RSS measured inside it, the slice's time read from its log line.
 */
export async function bigSliceProductProcess(input: BigSliceProductInput, timeoutMs: number): Promise<BigSliceSideResult> {
  const child = await runMeasuredChild([CLI_BIN, ...runArguments(input)], { cwd: input.cwd, env: { ...input.env, LOG_LEVEL: 'info' }, timeoutMs });
  return loadedSlice(child.code ?? -1, child.stderr, child.peakRssBytes / 2 ** 20);
}

function runArguments(input: BigSliceProductInput): string[] {
  const { slice } = input;
  return ['run', '--from', slice.reportDate, '--to', slice.reportDate, '--portfolios', String(slice.portfolioId), '--report-types', slice.reportType];
}

/** The slice's rows and time from the export job's `loaded` log line (pino JSON). */
function loadedSlice(code: number, logs: string, peakRssMb: number): BigSliceSideResult {
  const loaded = logs
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { status?: string; rows?: number; durationMs?: number })
    .find((line) => line.status === 'loaded');
  if (code !== 0 || !loaded || loaded.rows === undefined || loaded.durationMs === undefined) {
    throw new Error(`report-sync run exited ${code} without loading the slice:\n${logs.slice(-4000)}`);
  }
  return { rows: loaded.rows, ms: loaded.durationMs, peakRssMb };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await bigSliceProduct(JSON.parse(process.argv[2]!) as BigSliceProductInput);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
