import { ConfigError } from '../errors/sync-error.js';
import { describeUrl } from '../redaction/redact.js';
import { engineForUrl, WAREHOUSE_ENGINES } from './engines.js';
import type { OpenedWarehouse, WarehouseEngine } from './warehouse-engine.js';

/** The name of a warehouse dialect, as its engine gives it (see `WarehouseEngine.dialect`). */
export type WarehouseDialect = (typeof WAREHOUSE_ENGINES)[number]['dialect'];

/** An open warehouse connection and the engine of its dialect; its owner must call `close()`. */
export interface WarehouseHandle extends OpenedWarehouse {
  /** Everything that differs by dialect: ask it, never which dialect it is. */
  readonly engine: WarehouseEngine;
}

export interface OpenWarehouseOptions {
  /** SQLite: how long a writer waits for another process's lock. @defaultValue 10000 */
  busyTimeoutMs?: number;
  /** Directory a relative `sqlite:` path is resolved against. @defaultValue process.cwd() */
  cwd?: string;
  /** Postgres: connections in the pool. @defaultValue 10 */
  poolSize?: number;
  /** Postgres: how long to wait for a connection before the query fails (0: no limit). @defaultValue 10000 */
  connectTimeoutMs?: number;
  /**
   * SQLite: refuse to create the file (read-only commands must never make an empty warehouse
   * where a path was mistyped). @defaultValue false
   */
  mustExist?: boolean;
  /**
   * SQLite: the mode a new warehouse file is created with (`warehouse.sqliteFileMode`); a
   * directory created for it gets the matching search bits (0o600 → 0o700). Existing files and
   * directories are left as they are. @defaultValue 0o600
   */
  sqliteFileMode?: number;
  /**
   * SQLite: checkpoint the WAL on a thread of its own (see `WalCheckpointer`), for a connection
   * that writes much (syncs); closing the handle stops the thread. @defaultValue false
   */
  checkpointOnThread?: boolean;
}

/**
 * Opens the warehouse named by a `DATABASE_URL` with the engine whose scheme it has (see
 * `WAREHOUSE_ENGINES`): `sqlite:<path>` (`sqlite::memory:` for a throw-away one) or
 * `postgres://user[:password]@host[:port]/database`.
 */
export async function openWarehouse(databaseUrl: string, options: OpenWarehouseOptions = {}): Promise<WarehouseHandle> {
  const engine = engineForUrl(databaseUrl);
  if (engine === undefined) {
    // Shown without its password, so that a typo (one slash, no scheme) can be seen.
    const shown = describeUrl(databaseUrl);
    const examples = WAREHOUSE_ENGINES.map((known) => known.example).join(' or ');
    throw new ConfigError(`DATABASE_URL${shown ? ` (${shown})` : ''} must look like ${examples}`);
  }
  return { ...(await engine.open(databaseUrl, options)), engine };
}
