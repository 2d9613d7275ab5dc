import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import type { Slice } from '../../src/slice/slice.js';
import type { BenchSize } from './bench-result.js';
import { emptyMysqlWarehouse } from './empty-mysql-warehouse.js';
import { runGuaranteedJsonSlices } from './guaranteed-json-slices.js';
import { mysqlBaselineConnection } from './mysql-baseline.js';
import { runProductInProcess } from './run-product-in-process.js';
import { runRawJsonSlices, type RawUpstream } from './raw-json-slices.js';
import mysql from 'mysql2/promise';

/** The sides of the small-slices benchmark that run in one process: the two scripts and `run`. */
export type SmallSliceSideName = 'raw' | 'guaranteed' | 'product';

/** One run of a side: its slices, where they go, and (product) the project directory it runs in. */
export interface SmallSliceRun {
  readonly slices: readonly Slice[];
  /** `DATABASE_URL`: a new SQLite file, or a migrated MySQL warehouse with no slices. */
  readonly databaseUrl: string;
  /** An empty directory of its own (the product's config/ and run.log). */
  readonly dir: string;
}

export interface SmallSliceSideInput {
  readonly side: SmallSliceSideName;
  readonly upstream: RawUpstream;
  /** The `REPORT_*` variables of the same upstream, for the product. */
  readonly env: Record<string, string>;
  readonly settings: SettingsInput;
  readonly concurrency: number;
  /** Loaded first, unmeasured: the side's process compiles its hot code on it. */
  readonly warmUp: SmallSliceRun;
  readonly measured: SmallSliceRun;
}

/** What the measured run did. */
export interface SmallSliceSideResult {
  readonly durationMs: number;
  /** CPU time of the side's process over `durationMs`. */
  readonly cpuMs: number;
  readonly rows: number;
  /** The product's: its exit code and how many slices it loaded and failed (the scripts load every slice or throw). */
  readonly exitCode: number;
  readonly loaded: number;
  readonly failed: number;
}

/** A side whose warm-up is done, waiting to be measured. */
export interface WarmSmallSliceSide {
  measure(): Promise<SmallSliceSideResult>;
}

/**
 * Starts a side and loads its warm-up slices. At full size the side runs in a process of its own,
 * as `report-sync run` does and as each worker does: run in the benchmark's process, after the
 * other sides, the product spent about a fifth more CPU a slice than in a process of its own, on
 * the same slices. At smoke size it runs in this process (the same code, without the seconds a
 * child spends loading TypeScript).
 */
export async function startSmallSliceSide(size: BenchSize, input: SmallSliceSideInput): Promise<WarmSmallSliceSide> {
  if (size === 'smoke') {
    await warmUp(input);
    return { measure: () => runSide(input, input.measured) };
  }
  return startSideProcess(input);
}

async function warmUp(input: SmallSliceSideInput): Promise<void> {
  await runSide(input, input.warmUp);
  // A MySQL warehouse is shared by the warm-up and the measured run: left as the warm-up found it.
  if (input.warmUp.databaseUrl === input.measured.databaseUrl && input.measured.databaseUrl.startsWith('mysql:')) {
    const connection = await mysql.createConnection(mysqlBaselineConnection(input.measured.databaseUrl));
    try {
      await connection.query('drop table if exists raw_index_report');
    } finally {
      await connection.end();
    }
    await emptyMysqlWarehouse(input.measured.databaseUrl);
  }
}

async function runSide(input: SmallSliceSideInput, run: SmallSliceRun): Promise<SmallSliceSideResult> {
  if (input.side === 'product') {
    const result = await runProductInProcess({ env: input.env, slices: run.slices, dir: run.dir, databaseUrl: run.databaseUrl, settings: input.settings });
    const { report } = result;
    return {
      durationMs: report.durationMs,
      cpuMs: result.cpuMs,
      rows: report.rowsWritten.index_report ?? 0,
      exitCode: result.exitCode,
      loaded: report.loaded,
      failed: report.failed,
    };
  }
  const script = input.side === 'raw' ? runRawJsonSlices : runGuaranteedJsonSlices;
  const result = await script({ upstream: input.upstream, slices: run.slices, concurrency: input.concurrency, databaseUrl: run.databaseUrl });
  return { durationMs: result.durationMs, cpuMs: result.cpuMs, rows: result.rows, exitCode: 0, loaded: result.slices, failed: 0 };
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const READY = 'warm';

/**
 * The side in a child process: it warms up, says {@link READY}, and runs the measured slices when
 * told to on its stdin, so the benchmark can reset its counters between the two. The input goes
 * through a file (thousands of slices do not fit in an argument).
 */
async function startSideProcess(input: SmallSliceSideInput): Promise<WarmSmallSliceSide> {
  const inputFile = join(input.measured.dir, 'side-input.json');
  writeFileSync(inputFile, JSON.stringify(input));
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), inputFile], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextLine = async (waitingFor: string): Promise<string> => {
    const line = await lines.next();
    if (line.done) throw new Error(`the ${input.side} side exited ${await exited} before ${waitingFor}:\n${stderr.slice(-4000)}`);
    return line.value;
  };
  const ready = await nextLine('its warm-up was done');
  if (ready !== READY) throw new Error(`the ${input.side} side said ${ready.slice(0, 200)} instead of ${READY}`);
  return {
    async measure() {
      child.stdin.end('go\n');
      const result = await nextLine('its result');
      if ((await exited) !== 0) throw new Error(`the ${input.side} side failed:\n${stderr.slice(-4000)}`);
      return JSON.parse(result) as SmallSliceSideResult;
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const input = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SmallSliceSideInput;
  await warmUp(input);
  process.stdout.write(`${READY}\n`);
  let told = false;
  for await (const line of createInterface({ input: process.stdin })) {
    told = line === 'go';
    if (told) break;
  }
  if (!told) process.exit(1);
  process.stdout.write(`${JSON.stringify(await runSide(input, input.measured))}\n`);
  // Written (a pipe's writes are synchronous on Linux); a keep-alive socket must not hold the process.
  process.exit(0);
}
