import { spawn } from 'node:child_process';
import { CLI_BIN } from './cli-bin.js';

/**
 * Runs `report-sync <args>` on a real pseudo-terminal (util-linux `script`), where standard output
 * and error are a TTY as for a person at a terminal; resolves with every byte the terminal received.
 * Asynchronous on purpose: a simulator answering from the test's process must keep running.
 */
export async function onTerminal(args: string, options: { cwd: string; env: Readonly<Record<string, string | undefined>> }): Promise<string> {
  const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI_BIN)} ${args}`;
  // script(1) waits on a standard input that stays open; the CLI reads none.
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm-256color', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let shown = '';
  child.stdout.on('data', (chunk: Buffer) => (shown += chunk.toString()));
  await new Promise((resolve) => child.on('exit', resolve));
  return shown;
}
