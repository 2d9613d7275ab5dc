import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCliProcess } from './cli-process.js';

const PRELOAD = new URL('./peak-rss-preload.mjs', import.meta.url).pathname;

/** How a `report-sync` process went, and the most memory it held. */
export interface MeasuredCliRun {
  /** The exit code, or the signal's name. */
  readonly code: number | string;
  readonly stdout: string;
  /** Standard output and error, interleaved. */
  readonly output: string;
  /** Its peak resident memory (VmHWM, all threads), in MB; undefined when it died without exiting. */
  readonly peakMb: number | undefined;
  readonly seconds: number;
}

/**
 * Runs `report-sync <args>` as a process of its own and reads its peak resident memory from the
 * kernel as it exits (see peak-rss-preload.mjs): the whole life of the process, not samples of it.
 */
export async function measuredCliRun(args: readonly string[], options: { cwd: string; env: Readonly<Record<string, string | undefined>> }): Promise<MeasuredCliRun> {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-rss-'));
  const file = join(dir, 'peak-kb');
  const startedAt = performance.now();
  try {
    const cli = startCliProcess(args, { cwd: options.cwd, env: { ...options.env, NODE_OPTIONS: `--import ${PRELOAD}`, REPORT_SYNC_TEST_PEAK_RSS_FILE: file } });
    const code = await cli.exited;
    const peakMb = existsSync(file) ? Number(readFileSync(file, 'utf8')) / 1024 : undefined;
    return { code, stdout: cli.stdout(), output: cli.output(), peakMb, seconds: (performance.now() - startedAt) / 1000 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
