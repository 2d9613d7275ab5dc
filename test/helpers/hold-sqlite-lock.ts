import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { SQLITE_DRIVER_PACKAGE } from '../../src/warehouse/sqlite/sqlite-driver.js';

const BETTER_SQLITE3 = createRequire(import.meta.url).resolve(SQLITE_DRIVER_PACKAGE);

// Runs in the child: the lock must be held by another process, as an analyst's tool or a second
// writer would hold it, not by a connection of the process under test.
const HOLDER = `
const Database = require(process.env.BETTER_SQLITE3);
const db = new Database(process.env.WAREHOUSE_FILE);
db.exec('BEGIN EXCLUSIVE');
process.stdout.write('locked\\n');
const release = () => { db.exec('COMMIT'); db.close(); process.stdout.write('released\\n'); process.exit(0); };
setTimeout(release, Number(process.env.HOLD_MS));
process.on('SIGTERM', release);
`;

/**
 * Another process holding `BEGIN EXCLUSIVE` on a SQLite file for `holdMs`. Resolves once the lock
 * is taken; `released` resolves when the holder has committed and exited; `release()` ends it early.
 */
export async function holdSqliteLock(file: string, holdMs: number) {
  const child = spawn(process.execPath, ['-e', HOLDER], {
    env: { PATH: process.env.PATH ?? '', BETTER_SQLITE3, WAREHOUSE_FILE: file, HOLD_MS: String(holdMs) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const deadline = Date.now() + 10_000;
  while (!output.includes('locked')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the lock holder did not take the lock:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const lockedAt = Date.now();
  return {
    lockedAt,
    /** Resolves with the holder's exit code once it has committed and gone. */
    released: exited,
    async release(): Promise<void> {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
