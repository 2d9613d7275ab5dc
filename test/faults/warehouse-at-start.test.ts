import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '../../src/warehouse/sqlite/sqlite-driver.js';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startCliProcess, type CliProcess } from '../helpers/cli-process.js';
import { holdSqliteLock } from '../helpers/hold-sqlite-lock.js';
import { startPrivateMariadb } from '../helpers/private-mariadb.js';
import { startPrivatePostgres } from '../helpers/private-postgres.js';
import { createTempDatabase } from '../helpers/temp-warehouse.js';
import { untilSaid } from '../helpers/until.js';

/*
 * A warehouse that is not ready when a command starts: a Postgres or MySQL refusing connections (not yet
 * listening, starting up, restarting during a deploy) is waited for up to startup.timeoutMs, as
 * Redis is, while a database that does not exist still fails at once; a SQLite warehouse another
 * process holds the write lock of is waited for up to warehouse.busyTimeoutMs before migrating,
 * and a Postgres or MySQL warehouse another process is migrating for as long as that takes.
 * Every wait says what it waits for, and ends on the first SIGTERM. The real compiled CLI, each in
 * a process of its own.
 */

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A project directory with these settings in config/default.json. */
function project(settings: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-at-start-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config/default.json'), JSON.stringify({ log: { level: 'info' }, ...settings }));
  return dir;
}

/** `report-sync migrate` as a process, killed if it is still there after `limitMs`. */
function migrate(dir: string, databaseUrl: string, limitMs = 120_000) {
  const startedAt = Date.now();
  const process = startCliProcess(['migrate'], { cwd: dir, env: { DATABASE_URL: databaseUrl } });
  const killer = setTimeout(() => process.child.kill('SIGKILL'), limitMs);
  const finished = process.exited.then((exit) => {
    clearTimeout(killer);
    return { exit, elapsedMs: Date.now() - startedAt, output: process.output(), stdout: process.stdout() };
  });
  return { process, startedAt, finished };
}

/** Sends SIGTERM once `what` is in the output, and says how long the process took to go. */
async function stopOnceWaiting(process: CliProcess, what: string) {
  await untilSaid(process, what, 30_000);
  const signalledAt = Date.now();
  process.child.kill('SIGTERM');
  const exit = await process.exited;
  return { exit, stoppedInMs: Date.now() - signalledAt };
}

/** What the tests below need of a private server: stopped and started at will. */
interface StoppableServer {
  readonly serverUrl: string;
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

const REFUSING_SERVERS: readonly { readonly name: string; start(): Promise<StoppableServer>; readonly noSuchDatabase: RegExp }[] = [
  {
    name: 'Postgres',
    start: startPrivatePostgres,
    noSuchDatabase: /database "report_sync_no_such_database" does not exist \(3D000\); create it with createdb, or fix the database name in DATABASE_URL/,
  },
  {
    name: 'MySQL (MariaDB)',
    start: startPrivateMariadb,
    noSuchDatabase:
      /Unknown database 'report_sync_no_such_database' \(ER_BAD_DB_ERROR\); create it \(CREATE DATABASE … CHARACTER SET utf8mb4\), or fix the database name in DATABASE_URL/,
  },
];

describe.each(REFUSING_SERVERS)('a $name that refuses connections when a command starts', (kind) => {
  let server: StoppableServer | undefined;
  let databaseUrl = '';
  beforeAll(async () => {
    server = await kind.start();
    databaseUrl = await server.createDatabase('late_start');
  }, 90_000);
  afterAll(async () => {
    await server?.destroy();
  }, 60_000);

  it('is waited for: started 5 s after migrate was called, migrate goes on and succeeds', async () => {
    await server!.stop();
    const dir = project({ startup: { timeoutMs: 60_000 } });
    const running = migrate(dir, databaseUrl);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await server!.start();
    const result = await running.finished;

    expect(result.exit, result.output).toBe(0);
    expect(result.stdout).toContain(`Applied 0001-create-tables, 0002-ledger-error-code`);
    expect(result.elapsedMs).toBeGreaterThanOrEqual(5_000);
    // Said once when the wait began and once when it ended, not at every try.
    expect(result.output.match(/the warehouse refuses connections .*: waiting for it up to startup.timeoutMs/g)).toHaveLength(1);
    expect(result.output).toContain('ECONNREFUSED');
    expect(result.output).toContain('the warehouse accepts connections again');
  }, 150_000);

  it('a database that does not exist still fails at once with exit 2, however long startup.timeoutMs is', async () => {
    await server!.start();
    const dir = project({ startup: { timeoutMs: 60_000 } });
    const result = await migrate(dir, `${server!.serverUrl}/report_sync_no_such_database`).finished;

    expect(result.exit, result.output).toBe(2);
    expect(result.output).toMatch(kind.noSuchDatabase);
    expect(result.output).not.toContain('waiting for it');
    // Node's start-up is most of this on a loaded machine; the wait would have been 60 s.
    expect(result.elapsedMs).toBeLessThan(15_000);
  }, 60_000);

  it('one that never comes back: exit 2 after startup.timeoutMs, saying it refused connections for that long', async () => {
    await server!.stop();
    const dir = project({ startup: { timeoutMs: 3_000 } });
    const result = await migrate(dir, databaseUrl).finished;

    expect(result.exit, result.output).toBe(2);
    const said =
      /report-sync: the warehouse at (\S+) refused connections for (\d+\.\d) s \(startup\.timeoutMs is 3000 ms\): .*ECONNREFUSED.*; check DATABASE_URL and that the database server is running\n/.exec(
        result.output,
      );
    expect(said, result.output).not.toBeNull();
    expect(said![1]).toBe(databaseUrl);
    expect(Number(said![2])).toBeGreaterThanOrEqual(3);
    expect(result.output).not.toContain('did not answer');
    expect(result.elapsedMs).toBeGreaterThanOrEqual(3_000);
  }, 60_000);

  it('stops on the first SIGTERM while it waits, saying what it was waiting for', async () => {
    await server!.stop();
    const dir = project({ startup: { timeoutMs: 120_000 } });
    const running = migrate(dir, databaseUrl);
    const { exit, stoppedInMs } = await stopOnceWaiting(running.process, 'waiting for it up to startup.timeoutMs');
    const output = running.process.output();

    expect(exit, output).toBe(1);
    expect(stoppedInMs).toBeLessThan(5_000);
    expect(output).toContain('report-sync: stopped while waiting for the warehouse at');
    expect(output).toContain(`${databaseUrl} to accept connections`);
  }, 60_000);
});

describe('a SQLite warehouse whose write lock another process holds when it is to be migrated', () => {
  let lock: Awaited<ReturnType<typeof holdSqliteLock>> | undefined;
  afterEach(async () => {
    await lock?.release();
    lock = undefined;
  });

  /** A new, empty warehouse file in WAL mode (as report-sync leaves one), locked by another process. */
  async function lockedWarehouse(settings: object) {
    const dir = project(settings);
    const file = join(dir, 'warehouse.sqlite');
    const database = new Database(file);
    database.pragma('journal_mode = WAL');
    database.close();
    lock = await holdSqliteLock(file, 60_000);
    return { dir, databaseUrl: `sqlite:${file}` };
  }

  it('waits for it, saying so, and migrates once it is released', async () => {
    const { dir, databaseUrl } = await lockedWarehouse({ warehouse: { busyTimeoutMs: 60_000 } });
    const running = migrate(dir, databaseUrl);
    await untilSaid(running.process, 'waiting for its write lock to migrate', 30_000);
    await lock!.release();
    const result = await running.finished;

    expect(result.exit, result.output).toBe(0);
    expect(result.stdout).toContain('Applied 0001-create-tables');
    expect(result.output).toContain('took the write lock to migrate');
  }, 60_000);

  it('gives up after warehouse.busyTimeoutMs with exit 2, saying what held it up and what to do', async () => {
    const { dir, databaseUrl } = await lockedWarehouse({ warehouse: { busyTimeoutMs: 1_500 } });
    const result = await migrate(dir, databaseUrl).finished;

    expect(result.exit, result.output).toBe(2);
    expect(result.output).toMatch(
      /report-sync: cannot migrate sqlite:\S+: another process held its write lock for longer than warehouse\.busyTimeoutMs \(\d+ ms waited; .*\): run report-sync migrate again when it is done, or raise warehouse\.busyTimeoutMs\n/,
    );
  }, 60_000);

  it('stops on the first SIGTERM while it waits, saying what it was waiting for', async () => {
    const { dir, databaseUrl } = await lockedWarehouse({ warehouse: { busyTimeoutMs: 120_000 } });
    const running = migrate(dir, databaseUrl);
    const { exit, stoppedInMs } = await stopOnceWaiting(running.process, 'waiting for its write lock to migrate');
    const output = running.process.output();

    expect(exit, output).toBe(1);
    expect(stoppedInMs).toBeLessThan(5_000);
    expect(output).toContain(`report-sync: stopped while waiting for the write lock of ${databaseUrl}`);
  }, 60_000);
});

/** Another session holding the migration lock of `databaseUrl`, as a report-sync of an earlier release takes it through Kysely. */
async function holdMigrationLock(dialect: 'postgres' | 'mysql', databaseUrl: string) {
  if (dialect === 'postgres') {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query('select pg_advisory_lock(3853314791062309107)');
    return {
      release: async () => void (await client.query('select pg_advisory_unlock(3853314791062309107)')),
      tables: async () => (await client.query<{ n: number }>("select count(*)::int as n from information_schema.tables where table_schema = 'public'")).rows[0]!.n,
      end: () => client.end(),
    };
  }
  // MySQL's named locks are the server's, not the database's: another test file migrating a
  // database of its own on the same server may hold it for a moment, so wait for it, and make sure.
  const connection = await mysql.createConnection(databaseUrl);
  const [taken] = await connection.query<mysql.RowDataPacket[]>("select get_lock('ea586330-2c93-47c8-908d-981d9d270f9d', 30) as locked");
  if (Number(taken[0]!.locked) !== 1) throw new Error('could not take the MySQL migration lock within 30 s: another process on the server holds it');
  return {
    release: async () => void (await connection.query("select release_lock('ea586330-2c93-47c8-908d-981d9d270f9d')")),
    tables: async () => {
      const [rows] = await connection.query<mysql.RowDataPacket[]>('select count(*) as n from information_schema.tables where table_schema = database()');
      return Number(rows[0]!.n);
    },
    end: () => connection.end(),
  };
}

describe.each(['postgres', 'mysql'] as const)('a %s warehouse another process is migrating', (dialect) => {
  let database: Awaited<ReturnType<typeof createTempDatabase>> | undefined;
  let holder: Awaited<ReturnType<typeof holdMigrationLock>> | undefined;
  afterEach(async () => {
    await holder?.end();
    holder = undefined;
    await database?.drop();
    database = undefined;
  });

  /** A new database whose migration lock another session holds. */
  async function lockedDatabase() {
    database = await createTempDatabase(dialect);
    holder = await holdMigrationLock(dialect, database.databaseUrl);
    return { dir: project({}), databaseUrl: database.databaseUrl };
  }

  it('waits for it, saying so, and migrates once it is done', async () => {
    const { dir, databaseUrl } = await lockedDatabase();
    const running = migrate(dir, databaseUrl);
    await untilSaid(running.process, 'another process is migrating the warehouse: waiting for it to finish', 30_000);
    await holder!.release();
    const result = await running.finished;

    expect(result.exit, result.output).toBe(0);
    expect(result.stdout).toContain('Applied 0001-create-tables');
    expect(result.output).toContain('took the migration lock');
  }, 60_000);

  it('stops on the first SIGTERM while it waits, saying what it was waiting for, and leaves nothing half-done', async () => {
    const { dir, databaseUrl } = await lockedDatabase();
    const running = migrate(dir, databaseUrl);
    const { exit, stoppedInMs } = await stopOnceWaiting(running.process, 'another process is migrating the warehouse');
    const output = running.process.output();

    expect(exit, output).toBe(1);
    expect(stoppedInMs).toBeLessThan(5_000);
    expect(output).toContain(`report-sync: stopped while waiting for another process's migration of`);
    expect(await holder!.tables()).toBe(0);
  }, 60_000);
});
