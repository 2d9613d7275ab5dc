/*
 * The thread of WalCheckpointer: its own connection to the SQLite warehouse, checkpointing the
 * WAL (PASSIVE: it never waits for, nor blocks, the writer or readers) while the writer commits.
 * Polls often while there is WAL to copy and backs off while there is none. Any error ends the
 * thread, and the writer then checkpoints for itself again (see WalCheckpointer).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Database } from './sqlite-driver.js';
import type { WalCheckpointJob } from './wal-checkpointer.js';

const port = parentPort;
if (!port) throw new Error('wal-checkpoint-worker runs only as a worker thread (see WalCheckpointer)');
const job = workerData as WalCheckpointJob;
const database = new Database(job.file, { fileMustExist: true });

let pauseMs = job.minPauseMs;
let timer: NodeJS.Timeout | undefined;
// What the last checkpoint found: a WAL copied whole keeps its frames (and these counts) until the
// writer's next transaction starts it over, so "no change" is what tells an idle writer.
let lastLog = 0;
let lastCheckpointed = 0;
const checkpoint = () => {
  // Frames in the WAL and frames copied into the database; -1 when not in WAL mode.
  const [result] = database.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
  const log = result?.log ?? -1;
  const checkpointed = result?.checkpointed ?? -1;
  const moved = log !== lastLog || checkpointed !== lastCheckpointed;
  lastLog = log;
  lastCheckpointed = checkpointed;
  pauseMs = moved ? job.minPauseMs : Math.min(pauseMs * 2, job.maxPauseMs);
  timer = setTimeout(checkpoint, pauseMs);
};
timer = setTimeout(checkpoint, pauseMs);

port.on('message', () => {
  clearTimeout(timer);
  database.close();
  port.close();
});
