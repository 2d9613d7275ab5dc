import { spawn, type ChildProcess } from 'node:child_process';
import { CLI_BIN } from './cli-bin.js';

/** A `report-sync` command started as a process of its own (`node dist/src/cli/bin.js …`). */
export interface CliProcess {
  readonly child: ChildProcess;
  /** Standard output and error so far, interleaved as they came. */
  output(): string;
  /** Standard output alone. */
  stdout(): string;
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>;
}

/** Starts `report-sync <args>` in `cwd` with exactly `env` (plus PATH). */
export function startCliProcess(args: readonly string[], options: { cwd: string; env: Readonly<Record<string, string | undefined>> }): CliProcess {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, exited, output: () => output, stdout: () => stdout };
}
