/*
 * The thread of WalCheckpointer: its own connection to the SQLite warehouse, checkpointing the
 * WAL (PASSIVE: it never waits for, nor blocks, the writer or readers) while the writer commits.
 * Polls often while there is WAL to copy and backs off while there is none. Any error ends the
 * thread, and the writer then checkpoints for itself again (see WalCheckpointer).
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { WalCheckpointJob } from './wal-checkpointer.js';

const port = parentPort;
if (!port) throw new Error('wal-checkpoint-worker runs only as a worker thread (see WalCheckpointer)');
const job = workerData as WalCheckpointJob;
const database = new Database(job.file, { fileMustExist: true });

let pauseMs = job.minPauseMs;
let timer: NodeJS.Timeout | undefined;
const checkpoint = () => {
  // [busy, frames in the WAL, frames copied into the database]; -1s when not in WAL mode.
  const [result] = database.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
  const copied = result !== undefined && result.checkpointed > 0 && result.log > 0;
  pauseMs = copied ? job.minPauseMs : Math.min(pauseMs * 2, job.maxPauseMs);
  timer = setTimeout(checkpoint, pauseMs);
};
timer = setTimeout(checkpoint, pauseMs);

port.on('message', () => {
  clearTimeout(timer);
  database.close();
  port.close();
});
