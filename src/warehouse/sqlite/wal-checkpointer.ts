import type { SqliteConnection } from './sqlite-driver.js';
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../runtime/start-module-worker.js';

/** What the checkpoint thread is given (as `workerData`). */
export interface WalCheckpointJob {
  /** The warehouse file. */
  readonly file: string;
  /** Pause between checkpoints while the writer is busy. */
  readonly minPauseMs: number;
  /** Longest pause while the WAL has nothing new to copy. */
  readonly maxPauseMs: number;
}

/** SQLite's own: the writer checkpoints once a commit leaves the WAL this many pages long. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;
/** The writer's threshold while the thread checkpoints: a bound on the WAL should the thread fall behind. */
const SAFETY_NET_PAGES = 10_000;
/**
 * Pause between checkpoints while the writer commits. Each checkpoint copies the pages written since
 * the last one and syncs the file: every 20 ms, it re-copied the same hot pages (the ledger's, the
 * indexes') and synced the file dozens of times a second. A quarter second between them keeps the
 * WAL far under the safety net below.
 */
const DEFAULT_MIN_PAUSE_MS = 250;
/** How long closing waits for a checkpoint in progress (a big load's WAL takes about a second). */
const STOP_TIMEOUT_MS = 30_000;

/**
 * Copies the SQLite warehouse's WAL into the database file on a worker thread with a connection of
 * its own, instead of in the writer's COMMITs. SQLite checkpoints inside the COMMIT that takes the
 * WAL past 1,000 pages, on the thread that writes: those few COMMITs took most of the time a
 * sync's thread spent committing (see docs/performance.md). PASSIVE
 * checkpoints neither wait for the writer nor block it, and durability is SQLite's as before: a
 * commit is in the WAL when COMMIT returns, and in the database file after the next checkpoint.
 *
 * While the thread runs, the writer checkpoints only past 10,000 pages (40 MiB), so the WAL stays
 * bounded even if the thread falls behind; if the thread fails, the writer goes back to SQLite's
 * 1,000 and meets whatever failed it (a full disk, an I/O error) in its own COMMITs, where the
 * slice's error reports it.
 */
export class WalCheckpointer {
  readonly #worker: Worker;
  /** Settles when the thread has ended, however it ended. */
  readonly #ended: Promise<void>;
  #running = true;
  #stopping = false;

  private constructor(worker: Worker, database: SqliteConnection) {
    this.#worker = worker;
    this.#ended = new Promise<void>((resolve) => {
      worker.once('exit', () => {
        this.#running = false;
        // Stopped or failed, the writer checkpoints for itself again.
        if (database.open) database.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
        resolve();
      });
    });
    // An error ends the thread ('exit' follows); what failed it, the writer will meet in its COMMITs.
    worker.on('error', () => undefined);
  }

  /** Starts checkpointing `file`, whose writer connection is `database` (already in WAL mode). */
  static start(file: string, database: SqliteConnection, pauses: { readonly minPauseMs?: number; readonly maxPauseMs?: number } = {}): WalCheckpointer {
    const job: WalCheckpointJob = { file, minPauseMs: pauses.minPauseMs ?? DEFAULT_MIN_PAUSE_MS, maxPauseMs: pauses.maxPauseMs ?? 1_000 };
    // A small heap: the thread holds one connection and a timer.
    const worker = startModuleWorker(import.meta.url, 'wal-checkpoint-worker', { workerData: job, resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 16 } });
    // Never what keeps a finished command alive.
    worker.unref();
    database.pragma(`wal_autocheckpoint = ${SAFETY_NET_PAGES}`);
    return new WalCheckpointer(worker, database);
  }

  /** Whether the thread is checkpointing (false once it stopped or failed). */
  get running(): boolean {
    return this.#running;
  }

  /** Stops the thread once the checkpoint in progress ends (at most 30 s); the writer then checkpoints for itself. */
  async stop(): Promise<void> {
    if (this.#running && !this.#stopping) {
      this.#stopping = true;
      this.#worker.postMessage('stop');
      const timer = setTimeout(() => void this.#worker.terminate(), STOP_TIMEOUT_MS);
      await this.#ended;
      clearTimeout(timer);
    }
    await this.#ended;
  }
}
