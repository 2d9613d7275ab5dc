import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database, type SqliteConnection } from '../../../../src/warehouse/sqlite/sqlite-driver.js';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../../../src/warehouse/open-warehouse.js';
import { WalCheckpointer } from '../../../../src/warehouse/sqlite/wal-checkpointer.js';
import { until } from '../../../helpers/until.js';

const dirs: string[] = [];
const opened: SqliteConnection[] = [];

afterEach(() => {
  for (const database of opened.splice(0)) if (database.open) database.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A WAL-mode database file with one table, and its writer connection. */
function walDatabase(): { file: string; writer: SqliteConnection } {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-wal-'));
  dirs.push(dir);
  const file = join(dir, 'warehouse.sqlite');
  const writer = new Database(file);
  opened.push(writer);
  writer.pragma('journal_mode = WAL');
  writer.pragma('synchronous = NORMAL');
  writer.exec('create table t (id integer primary key, payload blob not null)');
  return { file, writer };
}

/** Commits `commits` transactions of 20 rows of 1 KiB: about 5 WAL pages each. */
function commitRows(writer: SqliteConnection, commits: number): void {
  const insert = writer.prepare('insert into t (payload) values (?)');
  const payload = Buffer.alloc(1024, 7);
  const commit = writer.transaction(() => {
    for (let i = 0; i < 20; i += 1) insert.run(payload);
  });
  for (let i = 0; i < commits; i += 1) commit();
}

const autocheckpoint = (writer: SqliteConnection) => writer.pragma('wal_autocheckpoint', { simple: true });

describe('WalCheckpointer', () => {
  it('copies the WAL into the database file on its thread while the writer commits, the writer checkpointing only past 10,000 pages', async () => {
    const { file, writer } = walDatabase();
    const checkpointer = WalCheckpointer.start(file, writer, { minPauseMs: 5, maxPauseMs: 20 });
    try {
      expect(checkpointer.running).toBe(true);
      expect(autocheckpoint(writer)).toBe(10_000);
      const emptySize = statSync(file).size;
      // About 2,500 pages: past SQLite's own 1,000, below the safety net; in WAL mode only a
      // checkpoint writes to the database file, and the writer was told not to until 10,000.
      commitRows(writer, 500);
      await until(() => statSync(file).size > emptySize + 8 * 1024 * 1024, 10_000, 'the rows to reach the database file', 10);
      const rows = writer.prepare('select count(*) as n from t').get() as { n: number };
      expect(rows.n).toBe(10_000);
    } finally {
      await checkpointer.stop();
    }
    expect(checkpointer.running).toBe(false);
    // Stopped, the writer checkpoints for itself again, at SQLite's own threshold.
    expect(autocheckpoint(writer)).toBe(1_000);
  });

  it('ends without hanging when its thread cannot open the database, and the writer checkpoints for itself again', async () => {
    const { file, writer } = walDatabase();
    const checkpointer = WalCheckpointer.start(`${file}-not-there`, writer);
    await until(() => !checkpointer.running, 10_000, 'the failed thread to end', 10);
    expect(autocheckpoint(writer)).toBe(1_000);
    await checkpointer.stop();
    // The writer goes on committing and checkpointing as SQLite always did.
    commitRows(writer, 300);
    expect((writer.prepare('select count(*) as n from t').get() as { n: number }).n).toBe(6_000);
  });

  it('stops once, however often it is asked', async () => {
    const { file, writer } = walDatabase();
    const checkpointer = WalCheckpointer.start(file, writer);
    await Promise.all([checkpointer.stop(), checkpointer.stop()]);
    await checkpointer.stop();
    expect(checkpointer.running).toBe(false);
  });

  it('is started for a warehouse opened to write much, whose closing leaves the database whole and no WAL behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-wal-'));
    dirs.push(dir);
    const file = join(dir, 'warehouse.sqlite');
    const warehouse = await openWarehouse(`sqlite:${file}`, { checkpointOnThread: true });
    // The writer's own threshold is the safety net's while the thread checkpoints.
    expect((await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(warehouse.db)).rows[0]?.wal_autocheckpoint).toBe(10_000);
    await warehouse.db.schema
      .createTable('t')
      .addColumn('id', 'integer', (column) => column.primaryKey())
      .addColumn('payload', 'blob')
      .execute();
    for (let i = 0; i < 200; i += 1) {
      await warehouse.db
        .insertInto('t' as never)
        .values(Array.from({ length: 20 }, () => ({ payload: Buffer.alloc(1024, 1) })) as never)
        .execute();
    }
    await warehouse.close();
    expect(existsSync(`${file}-wal`)).toBe(false);
    const reader = new Database(file, { readonly: true });
    opened.push(reader);
    expect((reader.prepare('select count(*) as n from t').get() as { n: number }).n).toBe(4_000);
  });
});
