import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createCliLogger, loadCliConfig, type CliIo } from '../../src/cli/cli-io.js';
import { syncSlices } from '../../src/cli/sync-slices.js';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import { resolveUpstreamConfig } from '../../src/config/upstream-config.js';
import type { RunReport } from '../../src/runner/run-report.js';
import type { Slice } from '../../src/slice/slice.js';

export interface ProductInProcessOptions {
  /** The `REPORT_*` variables of the upstream. */
  readonly env: Record<string, string>;
  readonly slices: readonly Slice[];
  /** An empty directory of its own: the project directory (config/, the warehouse if SQLite). */
  readonly dir: string;
  /** `DATABASE_URL` of an empty (or migrated and empty) database; a SQLite file in `dir` when omitted. */
  readonly databaseUrl?: string;
  readonly settings: SettingsInput;
}

export interface ProductInProcessResult {
  readonly exitCode: number;
  readonly report: RunReport;
  /** CPU time of this process while the slices ran. */
  readonly cpuMs: number;
}

/** A stdout/stderr that drops what it is given and is not a terminal (no progress bar). */
class NullOutput extends Writable {
  isTTY = false;
  override _write(_chunk: unknown, _encoding: BufferEncoding, callback: () => void): void {
    callback();
  }
}

/**
 * The product's in-process sync, as `report-sync run 2> run.log` does it: the config layered from
 * a project directory, the CLI logger writing one JSON line per slice to a file (synchronously, as
 * the CLI writes to a redirected stderr), and `syncSlices` (services, runner, export job, summary)
 * into a fresh warehouse (SQLite unless told otherwise). The plan is the given slices, so it can skip weekends.
 */
export async function runProductInProcess(options: ProductInProcessOptions): Promise<ProductInProcessResult> {
  mkdirSync(join(options.dir, 'config'), { recursive: true });
  writeFileSync(join(options.dir, 'config/default.json'), JSON.stringify(options.settings));
  const logDestination = pino.destination({ dest: join(options.dir, 'run.log'), sync: true, mkdir: true });
  const io: CliIo = {
    stdout: new NullOutput(),
    stderr: new NullOutput(),
    env: { ...options.env, DATABASE_URL: options.databaseUrl ?? `sqlite:${join(options.dir, 'warehouse.sqlite')}` },
    cwd: options.dir,
    logDestination,
  };
  const config = loadCliConfig(io, {});
  let report: RunReport | undefined;
  let cpuMs = 0;
  let cpuAtStart = process.cpuUsage();
  try {
    const exitCode = await syncSlices({
      config,
      upstream: resolveUpstreamConfig(config.env),
      logger: createCliLogger(config, io),
      io,
      plan: () => {
        cpuAtStart = process.cpuUsage();
        return { slices: options.slices, planned: options.slices.length, description: `benchmark: ${options.slices.length} slices` };
      },
      after: async (_services, finished) => {
        const cpu = process.cpuUsage(cpuAtStart);
        cpuMs = (cpu.user + cpu.system) / 1000;
        report = finished;
      },
    });
    if (!report) throw new Error('syncSlices returned without a report');
    return { exitCode, report, cpuMs };
  } finally {
    logDestination.destroy();
  }
}
