import { CompiledQuery, type Kysely } from 'kysely';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Slice } from '../../../../src/slice/slice.js';
import { classifyWarehouseError } from '../../../../src/warehouse/engine/classify-warehouse-error.js';
import { CommitGroups, NotASmallSlice, type CommitGroupsOptions } from '../../../../src/warehouse/loading/commit-groups.js';
import type { SliceLock } from '../../../../src/warehouse/engine/slice-lock.js';
import type { Warehouse } from '../../../../src/warehouse/engine/warehouse-schema.js';
import { insertLoadedLedgerRow } from '../../../helpers/ledger-row.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';
import { until } from '../../../helpers/until.js';
import type { WarehouseDialect } from '../../../../src/warehouse/open-warehouse.js';

/** Another process's session on the warehouse, taking a slice's lock the way the dialect's slice lock does, held until its commit. */
interface OtherSession {
  begin(): Promise<void>;
  lock(slice: Slice): Promise<void>;
  commit(): Promise<void>;
  end(): Promise<void>;
}

async function otherSession(dialect: WarehouseDialect, databaseUrl: string): Promise<OtherSession> {
  if (dialect === 'mysql') {
    const connection = await mysql.createConnection(databaseUrl);
    return {
      begin: async () => void (await connection.query('begin')),
      lock: async (slice) =>
        void (await connection.query("select get_lock(concat('report-sync:', sha1(?)), 60)", [`slice ${slice.portfolioId} ${slice.reportType} ${slice.reportDate}`])),
      // A named lock is the session's: let go with the transaction, as the warehouse's pool does.
      commit: async () => {
        await connection.query('commit');
        await connection.query('do release_all_locks()');
      },
      end: () => connection.end(),
    };
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  return {
    begin: async () => void (await client.query('begin')),
    lock: async (slice) =>
      void (await client.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`report-sync slice ${slice.portfolioId} ${slice.reportType} ${slice.reportDate}`])),
    commit: async () => void (await client.query('commit')),
    end: () => client.end(),
  };
}

const slices: Slice[] = Array.from({ length: 5 }, (_, i) => ({ portfolioId: 1001 + i, reportType: 'index', reportDate: '2024-03-01' }));

/** The slice's write: its ledger row, stamped with the clock read under its lock. */
async function writeLedgerRow(trx: Kysely<Warehouse>, slice: Slice, now: string): Promise<string> {
  await insertLoadedLedgerRow(trx, slice, now);
  return `${slice.portfolioId}`;
}

/** The warehouse's slice lock, counting the transactions begun (and which of them were small). */
function countingLock(lock: SliceLock): SliceLock & { begun: number; small: number } {
  const counting = {
    begun: 0,
    small: 0,
    begin: async (connection: Kysely<Warehouse>, options?: { readonly small?: boolean }) => {
      counting.begun += 1;
      if (options?.small) counting.small += 1;
      await lock.begin(connection, options);
    },
    lock: (connection: Kysely<Warehouse>, slice: Slice, wait: boolean) => lock.lock(connection, slice, wait),
  };
  return counting;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe.each(DIALECTS)('CommitGroups on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  let lock: ReturnType<typeof countingLock>;
  const groups = (options: Partial<CommitGroupsOptions> = {}) =>
    new CommitGroups({
      db: warehouse.db,
      sliceLock: lock,
      maxSlices: 50,
      maxOpenMs: 10_000,
      parallel: 1,
      savepointReplacesItsName: warehouse.engine.transactions.savepointReplacesItsName,
      ...options,
    });
  // The loader asks the engine whether a slice's write may be small: Postgres has no small transactions.
  const smallAllowed = () => warehouse.engine.transactions.small({ rows: 'none' });
  const ledgerPortfolios = async () =>
    (await warehouse.db.selectFrom('report_loads').select('portfolio_id').orderBy('portfolio_id').execute()).map((row) => Number(row.portfolio_id));

  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
    lock = countingLock(warehouse.sliceLock);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('commits the slices that are ready together in one transaction, each with its own result', async () => {
    const committer = groups();
    const results = await Promise.all(slices.map((slice) => committer.write(slice, (trx, now) => writeLedgerRow(trx, slice, now))));
    expect(results).toEqual(['1001', '1002', '1003', '1004', '1005']);
    expect(lock.begun).toBe(1);
    expect(await ledgerPortfolios()).toEqual([1001, 1002, 1003, 1004, 1005]);
  });

  it('tells of upkeep that failed after a COMMIT, and its slices are committed all the same; upkeep that works is not told of', async () => {
    const told: unknown[] = [];
    const failing = new Error('no DELETE privilege on report_loads_monthly');
    const upkept = { ...lock, afterCommit: async () => Promise.reject(failing) };
    const results = await Promise.all(
      slices.slice(0, 2).map((slice) => groups({ sliceLock: upkept, onUpkeepError: (error) => told.push(error) }).write(slice, (trx, now) => writeLedgerRow(trx, slice, now))),
    );
    expect(results).toEqual(['1001', '1002']);
    expect(told).toEqual([failing, failing]);
    expect(await ledgerPortfolios()).toEqual([1001, 1002]);

    let upkeeps = 0;
    const working = { ...lock, afterCommit: async () => void (upkeeps += 1) };
    await groups({ sliceLock: working, onUpkeepError: (error) => told.push(error) }).write(slices[2]!, (trx, now) => writeLedgerRow(trx, slices[2]!, now));
    expect(upkeeps).toBe(1);
    expect(told).toHaveLength(2);
  });

  // Two in a row too: on MySQL each slice's savepoint replaces the one before, which is never released.
  it.each([
    { failing: [2], kept: [1001, 1002, 1004, 1005] },
    { failing: [2, 3], kept: [1001, 1002, 1005] },
  ])('rolls failing slices back alone ($failing): their callers hear their errors, the others commit', async ({ failing, kept }) => {
    const committer = groups();
    const failure = new Error('record 3 is not valid');
    const outcomes = await Promise.allSettled(
      slices.map((slice, i) =>
        committer.write(slice, async (trx, now) => {
          const written = await writeLedgerRow(trx, slice, now);
          if (failing.includes(i)) throw failure;
          return written;
        }),
      ),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(slices.map((_, i) => (failing.includes(i) ? 'rejected' : 'fulfilled')));
    for (const i of failing) expect((outcomes[i] as PromiseRejectedResult).reason).toBe(failure);
    expect(lock.begun).toBe(1);
    expect(await ledgerPortfolios()).toEqual(kept);
  });

  it('rolls the first slice of a transaction back with it when it fails (it needs no savepoint): the others commit in the next', async () => {
    const committer = groups();
    const failure = new Error('record 1 is not valid');
    const outcomes = await Promise.allSettled(
      slices.map((slice, i) =>
        committer.write(slice, async (trx, now) => {
          const written = await writeLedgerRow(trx, slice, now);
          if (i === 0) throw failure;
          return written;
        }),
      ),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect((outcomes[0] as PromiseRejectedResult).reason).toBe(failure);
    expect(lock.begun).toBe(2);
    expect(await ledgerPortfolios()).toEqual([1002, 1003, 1004, 1005]);
  });

  it('fails every slice of a transaction that is lost midway, and writes none of them', async () => {
    const committer = groups();
    const outcomes = await Promise.allSettled(
      slices.map((slice, i) =>
        committer.write(slice, async (trx, now) => {
          const written = await writeLedgerRow(trx, slice, now);
          if (i === 2) {
            // What a full disk (SQLite rolls the whole transaction back) or a lost server does to it.
            if (dialect === 'sqlite') await trx.executeQuery(CompiledQuery.raw('rollback'));
            else if (dialect === 'mysql') await trx.executeQuery(CompiledQuery.raw('kill connection_id()')).catch(() => undefined);
            else await trx.executeQuery(CompiledQuery.raw('select pg_terminate_backend(pg_backend_pid())')).catch(() => undefined);
            throw new Error('the disk is full');
          }
          return written;
        }),
      ),
    );
    // The slices before it had finished their work, but were not committed: they fail too, never "done".
    expect(outcomes.slice(0, 3).map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(((outcomes[2] as PromiseRejectedResult).reason as Error).message).toBe('the disk is full');
    // The ones after it were never taken into the lost transaction: they commit in the next.
    expect(outcomes.slice(3).map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled']);
    expect(await ledgerPortfolios()).toEqual([1004, 1005]);
  });

  it('tells no caller of success before the COMMIT that holds its slice', async () => {
    const committer = groups();
    const second = deferred();
    let firstSettled = false;
    const first = committer.write(slices[0]!, (trx, now) => writeLedgerRow(trx, slices[0]!, now)).then(() => (firstSettled = true));
    const secondWrite = committer.write(slices[1]!, async (trx, now) => {
      await second.promise;
      return writeLedgerRow(trx, slices[1]!, now);
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(firstSettled).toBe(false);
    second.resolve();
    await Promise.all([first, secondWrite]);
    expect(firstSettled).toBe(true);
    expect(lock.begun).toBe(1);
  });

  it('takes at most maxSlices slices per transaction, and a lone slice commits at once', async () => {
    const committer = groups({ maxSlices: 2 });
    await Promise.all(slices.map((slice) => committer.write(slice, (trx, now) => writeLedgerRow(trx, slice, now))));
    expect(lock.begun).toBe(3);
    const startedAt = performance.now();
    const lone: Slice = { portfolioId: 2001, reportType: 'index', reportDate: '2024-03-01' };
    await groups({ maxOpenMs: 60_000 }).write(lone, (trx, now) => writeLedgerRow(trx, lone, now));
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expect(await ledgerPortfolios()).toEqual([1001, 1002, 1003, 1004, 1005, 2001]);
  });

  it('gives each slice the warehouse clock read under its own lock, no earlier than the write was asked for', async () => {
    const committer = groups();
    const askedAt = new Date(Date.now() - 1_000).toISOString();
    const clocks = await Promise.all(slices.map((slice) => committer.write(slice, async (_trx, now) => now)));
    for (const clock of clocks) expect(clock >= askedAt).toBe(true);
  });

  it('gives small slices a small transaction (SQLite: the savepoint journal in memory) that takes no slice that is not small', async () => {
    const committer = groups();
    const tempStores: { small: boolean; store: number }[] = [];
    const work = (slice: Slice) => async (trx: Kysely<Warehouse>, now: string, small: boolean) => {
      if (dialect === 'sqlite')
        tempStores.push({ small, store: Number((await trx.executeQuery<{ temp_store: number }>(CompiledQuery.raw('pragma temp_store'))).rows[0]!.temp_store) });
      return writeLedgerRow(trx, slice, now);
    };
    await Promise.all(slices.map((slice, i) => committer.write(slice, work(slice), { small: i !== 2 && smallAllowed() })));
    expect(await ledgerPortfolios()).toEqual([1001, 1002, 1003, 1004, 1005]);
    if (dialect === 'sqlite') {
      // 1001 and 1002 small; 1003 not, so it begins the next transaction, which takes the rest too.
      expect([lock.begun, lock.small]).toEqual([2, 1]);
      // temp_store 2 is MEMORY, 0 SQLite's default (a file past 64 KiB).
      expect(tempStores).toEqual([
        { small: true, store: 2 },
        { small: true, store: 2 },
        { small: false, store: 0 },
        { small: false, store: 0 },
        { small: false, store: 0 },
      ]);
    } else {
      // Postgres has no small transactions: one transaction, as for any slices.
      expect([lock.begun, lock.small]).toEqual([1, 0]);
    }
  });

  it('runs a slice that finds itself big in a small transaction again, in one that is not, with nothing of the first try kept', async () => {
    const committer = groups();
    const tries: boolean[] = [];
    const outcomes = await Promise.all(
      slices.slice(0, 3).map((slice, i) =>
        committer.write(
          slice,
          async (trx, now, small) => {
            if (i === 1) {
              tries.push(small);
              // Written, then found big: were the first try kept, the second's insert of the same key would conflict.
              if (small) {
                await writeLedgerRow(trx, slice, now);
                throw new NotASmallSlice(50_000);
              }
            }
            return writeLedgerRow(trx, slice, now);
          },
          { small: smallAllowed() },
        ),
      ),
    );
    expect(outcomes).toEqual(['1001', '1002', '1003']);
    expect(await ledgerPortfolios()).toEqual([1001, 1002, 1003]);
    if (dialect === 'sqlite') {
      expect(tries).toEqual([true, false]);
      // 1001 in the first, small transaction; 1002 (handed back) and 1003 in the next.
      expect([lock.begun, lock.small]).toEqual([2, 1]);
    } else {
      // On Postgres no transaction is small: the slice is never handed back.
      expect(tries).toEqual([false]);
      expect(lock.begun).toBe(1);
    }
  });

  if (dialect !== 'sqlite') {
    it('commits what it has, without waiting, when another process holds a later slice, then waits for that one alone', async () => {
      const other = await otherSession(dialect, warehouse.databaseUrl);
      try {
        const held = slices[2]!;
        await other.begin();
        await other.lock(held);
        const committer = groups();
        const settled: number[] = [];
        const writes = slices.map((slice) => committer.write(slice, (trx, now) => writeLedgerRow(trx, slice, now)).then(() => settled.push(slice.portfolioId)));
        await until(() => settled.length >= 2, 5_000, 'the slices before the held one', 10);
        // The two before the held slice committed while its lock was still held elsewhere.
        expect(settled.sort()).toEqual([1001, 1002]);
        expect(await ledgerPortfolios()).toEqual([1001, 1002]);
        await other.commit();
        await Promise.all(writes);
        expect(await ledgerPortfolios()).toEqual([1001, 1002, 1003, 1004, 1005]);
        expect(lock.begun).toBe(2);
      } finally {
        await other.end();
      }
    });

    if (dialect === 'mysql') {
      it('fails the slices before one whose deadlock ended the whole transaction with that deadlock, which is retried', async () => {
        // InnoDB ends a deadlock by rolling back the whole transaction of its victim, savepoints and all.
        const { db } = warehouse;
        await db.executeQuery(CompiledQuery.raw('create table deadlock_probe (id integer primary key, n integer not null)'));
        await db.executeQuery(CompiledQuery.raw('insert into deadlock_probe values (1, 0), (2, 0)'));
        await db.executeQuery(CompiledQuery.raw('create table heavy (id integer primary key)'));
        const other = await mysql.createConnection(warehouse.databaseUrl);
        try {
          const [first, second] = [slices[0]!, slices[1]!];
          const firstHoldsRow = deferred();
          const otherWaits = deferred();
          const committer = groups();
          const writes = [
            committer.write(first, async (trx, now) => {
              await writeLedgerRow(trx, first, now);
              await trx.executeQuery(CompiledQuery.raw('update deadlock_probe set n = n + 1 where id = 1'));
              firstHoldsRow.resolve();
            }),
            committer.write(second, async (trx, now) => {
              await writeLedgerRow(trx, second, now);
              await otherWaits.promise;
              // Row 2 is the other session's, which waits for row 1, this transaction's: a deadlock.
              await trx.executeQuery(CompiledQuery.raw('update deadlock_probe set n = n + 1 where id = 2'));
            }),
          ];
          const settled = Promise.allSettled(writes);
          await firstHoldsRow.promise;
          await other.query('begin');
          // More rows changed than the group's transaction: InnoDB picks the group as the victim.
          await other.query(`insert into heavy values ${Array.from({ length: 200 }, (_, i) => `(${i})`).join(', ')}`);
          await other.query('update deadlock_probe set n = n + 1 where id = 2');
          const otherUpdate = other.query('update deadlock_probe set n = n + 1 where id = 1');
          const watcher = await mysql.createConnection(warehouse.databaseUrl);
          try {
            await until(
              async () => {
                const [rows] = await watcher.query<mysql.RowDataPacket[]>('select 1 from information_schema.innodb_lock_waits');
                return rows.length > 0;
              },
              5_000,
              'the other session waiting for row 1',
              // InnoDB refreshes these tables only after 100 ms without a read: polled faster, it
              // would show the tables as they were at the first poll for ever.
              150,
            );
          } finally {
            await watcher.end();
          }
          otherWaits.resolve();
          const outcomes = await settled;
          await otherUpdate;
          await other.query('commit');
          expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
          for (const outcome of outcomes) {
            const reason = (outcome as PromiseRejectedResult).reason as { code?: string };
            expect(reason.code).toBe('ER_LOCK_DEADLOCK');
            expect(classifyWarehouseError(reason, 'writing a slice').retryable).toBe(true);
          }
          expect(await ledgerPortfolios()).toEqual([]);
          // Retried, as the runner retries them: both load.
          await Promise.all([first, second].map((slice) => committer.write(slice, (trx, now) => writeLedgerRow(trx, slice, now))));
          expect(await ledgerPortfolios()).toEqual([1001, 1002]);
        } finally {
          await other.end();
        }
      });
    }

    it('never waits for a lock while it holds one, even one kept by a slice that was rolled back: no deadlock with another process', async () => {
      const other = await otherSession(dialect, warehouse.databaseUrl);
      try {
        const [failing, held, last] = [slices[0]!, slices[1]!, slices[2]!];
        await other.begin();
        await other.lock(held);
        const committer = groups();
        const started = deferred();
        const writes = [
          committer.write(failing, async () => {
            started.resolve();
            throw new Error('a bad record');
          }),
          committer.write(held, (trx, now) => writeLedgerRow(trx, held, now)),
          committer.write(last, (trx, now) => writeLedgerRow(trx, last, now)),
        ];
        const settled = Promise.allSettled(writes);
        await started.promise;
        // The other process now wants the failed slice's lock, which that transaction still holds
        // (a rollback to a savepoint keeps it): the transaction must let go rather than wait on it.
        await other.lock(failing);
        await other.commit();
        const outcomes = await settled;
        expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
        expect(((outcomes[0] as PromiseRejectedResult).reason as Error).message).toBe('a bad record');
        expect(await ledgerPortfolios()).toEqual([1002, 1003]);
      } finally {
        await other.end();
      }
    });
  }
});
