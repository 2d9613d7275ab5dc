// A process that spools one body and then waits, for tests to kill: `spool-child.ts <parent> <bytes>`.
// Prints one JSON line: `{ "dir", "file" }` once the body is on disk, or `{ "code", "message" }`
// when spooling failed.
import { pino } from 'pino';
import { SyncError } from '../../src/errors/sync-error.js';
import { SpoolDirectory } from '../../src/gateway/spool-directory.js';
import { SpooledBody } from '../../src/gateway/spooled-body.js';

const [parent, size] = process.argv.slice(2);
if (!parent || !size) throw new Error('usage: spool-child.ts <parent directory> <body bytes>');
const spool = await SpoolDirectory.open({ parent, logger: pino({ level: 'silent' }) });
async function* chunks(): AsyncIterable<Buffer> {
  for (let left = Number(size); left > 0; left -= 16 * 1024) yield Buffer.alloc(Math.min(left, 16 * 1024), left % 251);
}
try {
  const body = await SpooledBody.from(chunks(), { memoryLimit: 1024, maxBytes: 1 << 30, spool });
  const source = body.zipSource();
  process.stdout.write(`${JSON.stringify({ dir: spool.path, file: 'path' in source ? source.path : null })}\n`);
  // Kept alive until killed; the body is never disposed of, on purpose.
  setInterval(() => {}, 1 << 30);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ code: error instanceof SyncError ? error.code : 'NOT_A_SYNC_ERROR', message: String((error as Error).message) })}\n`);
  await spool.close();
}
