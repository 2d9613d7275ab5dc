import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PRELOAD = fileURLToPath(new URL('./peak-rss-preload.mjs', import.meta.url));

/** What one measured child process did. */
export interface MeasuredChild {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** From spawn to exit, startup included. */
  readonly wallMs: number;
  /** The child's own peak resident set size, in bytes. */
  readonly peakRssBytes: number;
  /** The child's own CPU time, user + system, in ms (less disturbed by other load than wall time). */
  readonly cpuMs: number;
}

/**
 * Runs `node <nodeArgs…>` in a process of its own and reports its wall time, its own peak RSS and
 * CPU time (measured inside the child at exit, so the parent never counts).
 */
export async function runMeasuredChild(nodeArgs: readonly string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<MeasuredChild> {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-rss-'));
  const rssFile = join(dir, 'peak-rss');
  try {
    const startedAt = performance.now();
    const child = spawn(process.execPath, ['--import', PRELOAD, ...nodeArgs], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', ...options.env, BENCH_PEAK_RSS_FILE: rssFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timeout = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30 * 60_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (exitCode) => resolve(exitCode)));
    clearTimeout(timeout);
    const wallMs = performance.now() - startedAt;
    let usage = { peakRssBytes: Number.NaN, cpuMs: Number.NaN };
    try {
      usage = JSON.parse(readFileSync(rssFile, 'utf8')) as typeof usage;
    } catch {
      // The child died before its exit handler ran; the caller sees NaN and the exit code.
    }
    return { code, stdout, stderr, wallMs, ...usage };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
