import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statfsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, SqliteDialect, type SqliteDatabase } from 'kysely';
import { ConfigError, SyncError } from '../../errors/sync-error.js';
import { LOCAL_TROUBLE } from '../../errors/local-trouble.js';
import { MissingWarehouseError } from '../engine/missing-warehouse-error.js';
import type { Warehouse } from '../engine/warehouse-schema.js';
import type { OpenedWarehouse, OpenWarehouseOptions } from '../engine/warehouse-engine.js';
import { SqliteSliceLock } from './sqlite-slice-lock.js';
import { Database, type SqliteConnection, type SqliteStatement } from './sqlite-driver.js';
import { WalCheckpointer } from './wal-checkpointer.js';

/**
 * Opens the SQLite warehouse of a `sqlite:<path>` URL (`sqlite::memory:` for a throw-away one),
 * creating its file privately unless `mustExist`.
 */
export function openSqlite(databaseUrl: string, options: OpenWarehouseOptions): OpenedWarehouse {
  const rawPath = databaseUrl.slice('sqlite:'.length);
  const path = rawPath.replace(/^\/\/(?=\/)/, '');
  if (path === '') throw new ConfigError('DATABASE_URL: sqlite: needs a file path, e.g. sqlite:./data/warehouse.sqlite');
  const inMemory = path === ':memory:';
  const file = inMemory ? path : resolve(options.cwd ?? process.cwd(), path);
  if (!inMemory && options.mustExist && !existsSync(file)) {
    throw new MissingWarehouseError(`sqlite:${file}`, `there is no warehouse at ${file} (DATABASE_URL): check the path, or create one there with report-sync migrate`);
  }
  if (!inMemory && !options.mustExist) createPrivately(file, options.sqliteFileMode ?? 0o600);

  let database: SqliteConnection;
  try {
    database = new Database(file, { timeout: options.busyTimeoutMs ?? 10_000, fileMustExist: options.mustExist === true && !inMemory });
  } catch (error) {
    throw localStorageError(error, file);
  }
  try {
    // WAL lets `status` and analysts read while a sync writes; NORMAL sync is safe under WAL
    // (a power cut can lose the last commits, never half of one). WAL needs its files beside the warehouse.
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
  } catch (error) {
    database.close();
    throw localStorageError(error, file);
  }
  const checkpointer = options.checkpointOnThread && !inMemory ? WalCheckpointer.start(file, database) : undefined;
  const db = new Kysely<Warehouse>({ dialect: new SqliteDialect({ database: cachingStatements(database) }) });
  return {
    db,
    sliceLock: new SqliteSliceLock(options.busyTimeoutMs ?? 10_000),
    location: inMemory ? 'sqlite::memory:' : `sqlite:${file}`,
    // The thread's connection closes first, so the writer's is the last: SQLite then checkpoints the rest and removes the WAL.
    close: async () => {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/**
 * Creates the warehouse file (and its directory) with `fileMode` before SQLite opens it: SQLite
 * would create it world-readable (0644 under the usual umask), and its WAL and shared-memory
 * files take the main file's mode. An existing file is left as it is.
 */
function createPrivately(file: string, fileMode: number): void {
  // Search (x) bits for whoever may read the file, so the directory lets the same people in.
  const directoryMode = fileMode | ((fileMode & 0o444) >> 2);
  try {
    createDirectoryOf(file, directoryMode);
  } catch (error) {
    throw error instanceof SyncError ? error : localStorageError(error, file);
  }
  if (existsSync(file)) return;
  try {
    closeSync(openSync(file, 'wx', fileMode));
    // The umask may have taken bits the setting asks for.
    chmodSync(file, fileMode);
  } catch (error) {
    // Another process created it between the check and the open: theirs is as good as ours.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw localStorageError(error, file);
  }
}

/**
 * Makes the directory of `file` and the parents it lacks, one level at a time, each with `mode`. Not
 * `mkdirSync(…, { recursive: true })`: on a kernel filesystem such as /proc, mkdir fails with
 * ENOENT under a parent that exists, and Node's recursive mkdir then tries that parent again,
 * forever, at full CPU and deaf to signals (the loop never yields). Here the first existing
 * ancestor is found first, refused unless it is a directory on a filesystem that holds files, and
 * every mkdir is tried once.
 */
function createDirectoryOf(file: string, mode: number): void {
  const missing: string[] = [];
  let ancestor = dirname(file);
  for (;;) {
    const stats = statSync(ancestor, { throwIfNoEntry: false });
    if (stats !== undefined) {
      if (!stats.isDirectory()) throw Object.assign(new Error(`${ancestor} is not a directory`), { code: 'ENOTDIR' });
      break;
    }
    const parent = dirname(ancestor);
    if (parent === ancestor) break;
    missing.unshift(ancestor);
    ancestor = parent;
  }
  const kernel = kernelFilesystem(ancestor);
  if (kernel !== undefined) {
    throw new SyncError(
      'LOCAL_STORAGE',
      `cannot create or open the SQLite warehouse ${file} (${ancestor} is on the kernel's ${kernel} filesystem, which holds no files): ` +
        'point DATABASE_URL at a directory on a disk, such as sqlite:./data/warehouse.sqlite',
    );
  }
  for (const level of missing) {
    try {
      mkdirSync(level, { mode });
    } catch (error) {
      // Another process made it meanwhile (six starting at once): theirs is as good as ours.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && statSync(level, { throwIfNoEntry: false })?.isDirectory()) continue;
      throw error;
    }
    // The umask may have taken bits the setting asks for.
    chmodSync(level, mode);
  }
}

/** Linux's magic numbers (statfs f_type) of filesystems the kernel makes up, which hold no files. */
const KERNEL_FILESYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x1cd1, 'devpts'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
]);

/** The name of the kernel filesystem `dir` is on (Linux), or undefined for one that holds files. */
function kernelFilesystem(dir: string): string | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    return KERNEL_FILESYSTEMS.get(statfsSync(dir).type);
  } catch {
    // Unknown: the mkdir or open that follows says what is wrong, if anything is.
    return undefined;
  }
}

/**
 * The data directory or file cannot be made or opened (not writable, a read-only or full disk, a
 * path through a file): `LOCAL_STORAGE`, naming the path and DATABASE_URL, never a stack trace.
 */
function localStorageError(error: unknown, file: string): SyncError {
  const code = String((error as { code?: unknown }).code ?? '');
  const words = SQLITE_TROUBLE[code] ?? LOCAL_TROUBLE[code]?.words;
  const reason = words ? `${words}, ${code}` : error instanceof Error ? error.message : String(error);
  return new SyncError(
    'LOCAL_STORAGE',
    `cannot create or open the SQLite warehouse ${file} (${reason}): ` +
      'make its directory writable by this user (or free space there), or point DATABASE_URL at a writable place',
    { cause: error },
  );
}

/** SQLite's codes for a warehouse file it cannot open, in words (the operating system's are in LOCAL_TROUBLE). */
const SQLITE_TROUBLE: Record<string, string> = {
  // mkdir through a file: an existing path part is not a directory.
  EEXIST: 'a part of the path is a file, not a directory',
  SQLITE_CANTOPEN: 'SQLite cannot open it',
  SQLITE_READONLY: 'it is read-only',
  SQLITE_FULL: 'the disk is full',
  SQLITE_IOERR: 'an I/O error',
};

/** Prepared statements kept per connection, by SQL text; the least recently used goes first. */
const STATEMENT_CACHE_SIZE = 100;

/**
 * The database as Kysely's SQLite dialect sees it, but preparing each distinct SQL text once:
 * Kysely prepares every statement it runs, and preparing the same multi-row INSERT again for
 * each batch was a visible part of a big slice's load (see docs/performance.md).
 * Safe because Kysely runs one statement at a time on SQLite's single connection.
 */
function cachingStatements(database: SqliteConnection): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => database.close(),
    prepare(sql: string) {
      let statement = statements.get(sql);
      if (statement) {
        statements.delete(sql);
      } else {
        statement = database.prepare(sql);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
      }
      statements.set(sql, statement);
      return statement;
    },
  };
}
