import type { Kysely, MigrationProvider, MigrationResultSet, RawBuilder } from 'kysely';
import type { Logger } from '../../logging/logger.js';
import type { DecimalColumnRule } from './decimal-column-rule.js';
import type { IndexDefinition } from './index-definition.js';
import type { LedgerPeriod } from './ledger-period.js';
import type { RowWriter } from './row-writer.js';
import type { SliceLock } from './slice-lock.js';
import type { MigrationDialect } from './migration-dialect.js';
import type { Warehouse } from './warehouse-schema.js';
import type { WarehouseTables } from './warehouse-tables.js';

/**
 * Everything report-sync does differently per database, in one object per dialect
 * (`src/warehouse/<dialect>/<dialect>-engine.ts`), registered in `engines.ts`. Code outside the
 * dialect folders asks the engine and never which dialect it has, so a new database is a new
 * folder and one line in the registry.
 */
export interface WarehouseEngine<Dialect extends string = string> {
  /** Its name, for logs, metrics and messages only. */
  readonly dialect: Dialect;
  /** How a `DATABASE_URL` it opens starts, as written, e.g. `sqlite:` or `postgres://`. */
  readonly schemes: readonly string[];
  /** A `DATABASE_URL` of its kind, for the message about a URL no engine takes. */
  readonly example: string;

  /** Opens the warehouse a `DATABASE_URL` of one of its schemes names; the caller owns `close()`. */
  open(databaseUrl: string, options: OpenWarehouseOptions): Promise<OpenedWarehouse>;

  /** How a slice's rows are written: the bulk-load path (SQLite: multi-row INSERT; Postgres: COPY; MySQL: LOAD DATA LOCAL INFILE, or multi-row INSERT). */
  readonly rowWriter: RowWriter;
  /** Which declared types of a report table's decimal column keep what the row writer writes. */
  readonly decimalColumn: DecimalColumnRule;
  /** How big and how many the transactions that write slices may be. */
  readonly transactions: TransactionRules;

  /** The warehouse's clock (see `warehouseNow`). */
  now(db: Kysely<Warehouse>): Promise<string>;
  /** The first day (YYYY-MM-DD text) of `report_date`'s period, for the ledger's counts by period. */
  periodStart(period: LedgerPeriod): RawBuilder<string>;
  /** The tables (with their columns' declared types) report-sync's unqualified names reach; views left out. */
  readTables(db: Kysely<Warehouse>): Promise<WarehouseTables>;
  /** `kind name` (`index x`, `view y`) of every index and view those names reach. */
  readIndexesAndViews(db: Kysely<Warehouse>): Promise<ReadonlySet<string>>;
  /** A statement creating the index, changing nothing when it is there already (two `migrate`s at once). */
  createIndex(index: IndexDefinition): RawBuilder<unknown>;
  /** A statement creating the view, changing nothing when it is there already (two `migrate`s at once). */
  createView(name: string, query: RawBuilder<unknown>): RawBuilder<unknown>;

  /** What the migrations need to know of the dialect. */
  readonly migrations: MigrationDialect;
  /**
   * Runs Kysely's migrator over `provider`'s migrations so that processes migrating at once take
   * turns (Postgres: an advisory transaction lock; SQLite: the database's write lock).
   */
  migrate(warehouse: WarehouseHandle, provider: MigrationProvider, options: EngineMigrateOptions): Promise<MigrationResultSet>;
  /** A migration's error that means a table or column was dropped by hand under a view, to be said as the schema check says it. */
  isDroppedUnderView(error: unknown): boolean;

  /** Added to `SERVICE_UNREACHABLE` when the warehouse did not answer at start ('' when nothing helps). */
  readonly unreachableAdvice: string;
}

/**
 * The rules the loader asks before it writes a slice. SQLite keeps the savepoint journal of a
 * small transaction in memory, which only a bounded write may use; Postgres has no such mode.
 */
export interface TransactionRules {
  /** Transactions writing slices at once, each on a connection of its own. */
  readonly parallel: number;
  /** Whether a write of this kind may run in a small transaction. */
  small(write: SliceWrite): boolean;
  /** The most rows a slice may hold and still be replaced in a small transaction. */
  readonly smallMaxHeldRows: number;
  /**
   * A savepoint set under the name of one the transaction holds replaces it (MySQL), so a slice's
   * savepoint is left for the next slice's to replace rather than released, a round trip fewer a
   * slice. Postgres and SQLite keep both, nested, until released.
   */
  readonly savepointReplacesItsName: boolean;
}

/**
 * What a slice's write puts in the warehouse, as far as the size of its transaction goes: no rows
 * of a file (a ledger row; no data, which deletes what the slice held), rows of unknown number, or
 * the rows of a downloaded file, with what is known of its size.
 */
export type SliceWrite =
  | { readonly rows: 'none' | 'stream' }
  | {
      readonly rows: 'file';
      /** The file's body is held in memory (it was small enough), not spooled to disk. */
      readonly heldInMemory: boolean;
      /** The file is compressed (a ZIP): its rows may be many more than its bytes suggest. */
      readonly compressed: boolean;
    };

/** What an engine's `migrate` may need besides the migrator. */
export interface EngineMigrateOptions {
  /** A shutdown: a wait for another process's migration ends at once with `INTERRUPTED`. */
  readonly signal?: AbortSignal;
  /** Where a wait for another process's migration is said. */
  readonly logger?: Logger;
}

/** What an engine's `open` returns; `openWarehouse` adds the engine itself. */
export interface OpenedWarehouse {
  readonly db: Kysely<Warehouse>;
  /**
   * How this warehouse begins a slice's transaction and takes its lock; one per open warehouse,
   * since it may keep state of its connection (SQLite: the busy timeout and the journal's place).
   */
  readonly sliceLock: SliceLock;
  /** Where it is, with no password, for messages. */
  readonly location: string;
  close(): Promise<void>;
}

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
  /** Postgres, MySQL: connections in the pool. @defaultValue 10 */
  poolSize?: number;
  /**
   * MySQL: offer the server local files, so slices load with `LOAD DATA LOCAL INFILE` where the
   * server's `local_infile` is on; `false` always loads with multi-row INSERTs. @defaultValue true
   */
  mysqlLocalFiles?: boolean;
  /** Postgres, MySQL: how long to wait for a connection before the query fails (0: no limit). @defaultValue 10000 */
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
