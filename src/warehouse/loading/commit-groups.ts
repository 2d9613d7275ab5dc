import { CompiledQuery, type Kysely } from 'kysely';
import type { Slice } from '../../slice/slice.js';
import { classifyWarehouseError } from '../engine/classify-warehouse-error.js';
import type { SliceLock } from '../engine/slice-lock.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * One slice's write, run inside a transaction of the group's with the slice's lock held. `small`:
 * the transaction is a small one (see {@link CommitGroups}); work that finds its slice is not small
 * after all throws {@link NotASmallSlice} before it writes anything.
 */
export type SliceWork<T> = (trx: Kysely<Warehouse>, now: string, small: boolean) => Promise<T>;

/**
 * Thrown by a slice's work in a small transaction when the slice turns out to be big (it would
 * replace many rows), before it has written anything: the slice is handed back and runs again in a
 * transaction that is not small.
 */
export class NotASmallSlice extends Error {
  constructor(readonly heldRows: number) {
    super(`the slice holds ${heldRows} rows: too many for a small transaction`);
    this.name = 'NotASmallSlice';
  }
}

export interface CommitGroupsOptions {
  readonly db: Kysely<Warehouse>;
  readonly sliceLock: SliceLock;
  /** Most slices one transaction holds. 1 gives every slice a transaction of its own. */
  readonly maxSlices: number;
  /** A transaction takes no further slice once it has been open this long. */
  readonly maxOpenMs: number;
  /** Transactions open at once, each on a connection of its own (SQLite: 1, its writers take turns anyway). */
  readonly parallel: number;
  /** A slice's savepoint is replaced by the next one's, not released (see `TransactionRules.savepointReplacesItsName`). */
  readonly savepointReplacesItsName?: boolean;
  /**
   * Told when the slice lock's upkeep after a commit failed (see `SliceLock.afterCommit`): the
   * slices are committed all the same, but upkeep that keeps failing is for an operator to hear of.
   */
  readonly onUpkeepError?: (error: unknown) => void;
}

interface Pending {
  readonly slice: Slice;
  readonly work: SliceWork<unknown>;
  /** What it writes is known to be small (see {@link CommitGroups.write}). */
  readonly small: boolean;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: the writes of slices that are ready together share one transaction, each after the
 * first in a savepoint of its own. A slice whose work throws is rolled back alone (to its
 * savepoint, or with the transaction when it is the first to write) and its caller gets that
 * error; the others commit together. No caller hears of success before the COMMIT
 * that holds its slice has returned, so a kill at any moment leaves each slice wholly old or new,
 * exactly as with a transaction per slice.
 *
 * Why: the COMMIT, the BEGIN and the pages of the ledger's indexes that every slice touches were
 * the largest part of what a small slice cost the warehouse. Under load, many slices become ready
 * while one transaction is being written, so the busier the sync, the bigger the groups; a lone
 * slice commits at once, since a transaction commits as soon as no slice is waiting.
 *
 * Deadlock-free across processes: a transaction waits for a slice's lock only while it holds no
 * other; for each later slice it only tries, and when another process holds that lock it commits
 * what it has and starts again with that slice first.
 *
 * A transaction begun for a small slice is small (see `SliceLock.begin`: SQLite then keeps its
 * savepoint journal in memory) and takes only small slices; one that is not takes any slice.
 */
export class CommitGroups {
  readonly #options: CommitGroupsOptions;
  readonly #queue: Pending[] = [];
  #running = 0;
  #scheduled = false;

  constructor(options: CommitGroupsOptions) {
    this.#options = options;
  }

  /**
   * Runs `work` for the slice in a group's transaction; resolves once that transaction has committed.
   * `small`: the slice writes few rows (a body held in memory, not compressed) and, as its work
   * checks before writing (see {@link NotASmallSlice}), replaces few.
   */
  write<T>(slice: Slice, work: SliceWork<T>, options: { readonly small?: boolean } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ slice, work, small: options.small === true, resolve: resolve as (value: unknown) => void, reject });
      this.#schedule();
    });
  }

  /**
   * Starts transactions on the next turn of the event loop, so that the slices that become ready in
   * this turn (several downloads often finish together) join them: one, and more (up to `parallel`)
   * only while more slices wait than transactions run.
   */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      while (this.#running < this.#options.parallel && this.#queue.length > this.#running) {
        this.#running += 1;
        void this.#drain().finally(() => {
          this.#running -= 1;
          if (this.#queue.length > 0) this.#schedule();
        });
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      await this.#options.db
        .connection()
        .execute((connection) => this.#group(connection))
        // Only a connection that could not be had reaches here: the slice waiting first hears why.
        .catch((error: unknown) => this.#queue.shift()?.reject(error));
    }
  }

  /** One transaction: as many waiting slices as it may take, then COMMIT; settles each slice it took. */
  async #group(connection: Kysely<Warehouse>): Promise<void> {
    const { sliceLock, maxSlices, maxOpenMs } = this.#options;
    const committed: { pending: Pending; result: unknown }[] = [];
    const openedAt = performance.now();
    let current = this.#queue.shift();
    if (current === undefined) return;
    const { small } = current;
    // Set when a slice's work failed and undoing it failed too: that slice hears its own error.
    let lostIn: { error: unknown } | undefined;
    // Slices' locks this transaction holds: a slice rolled back to its savepoint keeps its lock.
    let locksHeld = 0;
    try {
      await sliceLock.begin(connection, { small });
      while (current !== undefined) {
        const now = await sliceLock.lock(connection, current.slice, locksHeld === 0);
        if (now === undefined) {
          // Another process holds this slice: commit the others first, then wait for it in a transaction of its own.
          this.#queue.unshift(current);
          current = undefined;
          break;
        }
        locksHeld += 1;
        // Until a slice of the transaction has succeeded, there is nothing to keep: the slice runs
        // bare, and the transaction's own rollback undoes it. A savepoint would have SQLite copy
        // every page the slice changes to its journal as well.
        const bare = committed.length === 0;
        if (!bare) await connection.executeQuery(SAVEPOINT);
        try {
          const result = await current.work(connection, now, small);
          if (!bare && this.#options.savepointReplacesItsName !== true) await connection.executeQuery(RELEASE);
          committed.push({ pending: current, result });
        } catch (error) {
          try {
            if (bare) await connection.executeQuery(ROLLBACK);
            else {
              await connection.executeQuery(ROLLBACK_TO);
              if (this.#options.savepointReplacesItsName !== true) await connection.executeQuery(RELEASE);
            }
          } catch (undoing) {
            lostIn = { error };
            throw undoing;
          }
          // Nothing of a slice too big for a small transaction was written: it goes first into the
          // next transaction, which is not small.
          const tooBig = error instanceof NotASmallSlice && small;
          if (tooBig) this.#queue.unshift({ ...current, small: false });
          else current.reject(error);
          // The transaction was rolled back whole: nothing is left in it to commit.
          if (bare) return;
          if (tooBig) {
            current = undefined;
            break;
          }
        }
        const next = this.#queue[0];
        const takesNext = next !== undefined && (next.small || !small) && committed.length < maxSlices && performance.now() - openedAt < maxOpenMs;
        current = takesNext ? this.#queue.shift() : undefined;
      }
      await connection.executeQuery(COMMIT);
    } catch (error) {
      // The transaction cannot go on (the connection or the database failed, or the COMMIT did):
      // nothing of it was written, so every slice in it fails, with what ended it.
      await connection.executeQuery(ROLLBACK).catch(() => undefined);
      current?.reject(lostIn ? lostIn.error : error);
      // A slice whose undoing failed because its own error had ended the transaction (a deadlock
      // rolls back the whole of it, savepoints too) takes the others down for that reason, retryably.
      const cause = lostIn && classifyWarehouseError(lostIn.error, 'writing a slice').retryable ? lostIn.error : error;
      for (const { pending } of committed) pending.reject(cause);
      return;
    }
    await sliceLock.afterCommit?.(connection).catch((error: unknown) => this.#options.onUpkeepError?.(error));
    for (const { pending, result } of committed) pending.resolve(result);
  }
}

const SAVEPOINT = CompiledQuery.raw('savepoint report_sync_slice');
const RELEASE = CompiledQuery.raw('release savepoint report_sync_slice');
const ROLLBACK_TO = CompiledQuery.raw('rollback to savepoint report_sync_slice');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
