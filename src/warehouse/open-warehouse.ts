import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { ConfigError } from '../errors.js';
import type { Warehouse } from './warehouse-schema.js';

export type WarehouseDialect = 'sqlite' | 'postgres';

/** An open warehouse connection; its owner must call `close()`. */
export interface WarehouseHandle {
  readonly db: Kysely<Warehouse>;
  readonly dialect: WarehouseDialect;
  /** Where it is, with no password, for messages. */
  readonly location: string;
  close(): Promise<void>;
}

export interface OpenWarehouseOptions {
  /** SQLite: how long a writer waits for another process's lock. @defaultValue 10000 */
  busyTimeoutMs?: number;
  /** Directory a relative `sqlite:` path is resolved against. @defaultValue process.cwd() */
  cwd?: string;
}

/**
 * Opens the warehouse named by a `DATABASE_URL`: `sqlite:<path>` (`sqlite::memory:` for a
 * throw-away one). Postgres URLs are refused with a message until that dialect is wired.
 */
export async function openWarehouse(databaseUrl: string, options: OpenWarehouseOptions = {}): Promise<WarehouseHandle> {
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl.slice('sqlite:'.length), options);
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL: the Postgres warehouse is not available in this version; use sqlite:<path>');
  }
  throw new ConfigError('DATABASE_URL must look like sqlite:./data/warehouse.sqlite or postgres://user@host/db');
}

function openSqlite(rawPath: string, options: OpenWarehouseOptions): WarehouseHandle {
  const path = rawPath.replace(/^\/\/(?=\/)/, '');
  if (path === '') throw new ConfigError('DATABASE_URL: sqlite: needs a file path, e.g. sqlite:./data/warehouse.sqlite');
  const inMemory = path === ':memory:';
  const file = inMemory ? path : resolve(options.cwd ?? process.cwd(), path);
  if (!inMemory) mkdirSync(dirname(file), { recursive: true });

  const database = new Database(file, { timeout: options.busyTimeoutMs ?? 10_000 });
  // WAL lets `status` and analysts read while a sync writes; NORMAL sync is safe under WAL
  // (a power cut can lose the last commits, never half of one).
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  const db = new Kysely<Warehouse>({ dialect: new SqliteDialect({ database }) });
  return {
    db,
    dialect: 'sqlite',
    location: inMemory ? 'sqlite::memory:' : `sqlite:${file}`,
    close: () => db.destroy(),
  };
}
