import type { Kysely, MigrationResultSet, Migrator, RawBuilder } from 'kysely';
import type { Logger } from '../logging/logger.js';
import type { OpenWarehouseOptions, WarehouseHandle } from './open-warehouse.js';
import type { LedgerPeriod } from './ledger/ledger.js';
import type { RowWriter } from './loading/row-writer.js';
import type { SliceLock } from './loading/slice-lock.js';
import type { MigrationDialect } from './schema/migrations/migration-dialect.js';
import type { Warehouse } from './schema/warehouse-schema.js';

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
  /** Whether `db` (a warehouse, a transaction or a connection of one) speaks this engine's dialect. */
  speaks(db: Kysely<Warehouse>): boolean;

  /** How a slice's rows are written: the bulk-load path (SQLite: multi-row INSERT; Postgres: COPY). */
  readonly rowWriter: RowWriter;
  /** How big and how many the transactions that write slices may be. */
  readonly transactions: TransactionRules;

  /** The warehouse's clock (see `warehouseNow`). */
  now(db: Kysely<Warehouse>): Promise<string>;
  /** The first day (YYYY-MM-DD text) of `report_date`'s period, for the ledger's counts by period. */
  periodStart(period: LedgerPeriod): RawBuilder<string>;
  /** The tables (with their columns) report-sync's unqualified names reach; views left out. */
  readTables(db: Kysely<Warehouse>): Promise<ReadonlyMap<string, ReadonlySet<string>>>;
  /** `kind name` (`index x`, `view y`) of every index and view those names reach. */
  readIndexesAndViews(db: Kysely<Warehouse>): Promise<ReadonlySet<string>>;
  /** A statement creating the view, changing nothing when it is there already (two `migrate`s at once). */
  createView(name: string, query: RawBuilder<unknown>): RawBuilder<unknown>;

  /** What the migrations need to know of the dialect. */
  readonly migrations: MigrationDialect;
  /**
   * Runs the migrator so that processes migrating at once take turns (Postgres: Kysely's advisory
   * lock; SQLite: the database's write lock).
   */
  migrate(warehouse: WarehouseHandle, migrator: Migrator, options: EngineMigrateOptions): Promise<MigrationResultSet>;
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
