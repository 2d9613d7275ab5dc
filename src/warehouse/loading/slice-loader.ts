import { randomUUID } from 'node:crypto';
import type { DecimalCapacity } from '../../reports/decimal-capacity.js';
import type { Kysely } from 'kysely';
import { SyncError } from '../../errors/sync-error.js';
import { QualityCheckError } from '../../quality/quality-check-error.js';
import type { SliceCheckResult } from '../../quality/slice-check-result.js';
import type { PreviousLoad, SliceCheckTally } from '../../quality/slice-check-tally.js';
import type { ReportDefinition } from '../../reports/report-definition.js';
import { rowColumns, type RowValues, type WarehouseRow } from '../../extract/row-builder.js';
import type { ExportFormat } from '../../reports/report-types.js';
import { describeSlice, type Slice } from '../../slice/slice.js';
import { classifyWarehouseError } from '../engine/classify-warehouse-error.js';
import { CommitGroups, type CommitGroupsOptions, NotASmallSlice, type SliceWork } from './commit-groups.js';
import { countRepeatedValues } from './count-repeated-values.js';
import { Ledger } from '../ledger/ledger.js';
import type { ExportFileFacts, LedgerStamp, LedgerWriter, LoadedFileRow } from '../ledger/ledger-writer.js';
import type { SliceWrite, WarehouseEngine, WarehouseHandle } from '../engine/warehouse-engine.js';
import { ReusableStatement } from '../engine/reusable-statement.js';
import type { SliceRows } from '../engine/row-writer.js';
import type { ReportLoadsRow, Warehouse } from '../engine/warehouse-schema.js';

export interface SliceLoaderOptions {
  /** The warehouse: its engine (row writer, transaction rules) and its slice lock (see `openWarehouse`). */
  readonly warehouse: Pick<WarehouseHandle, 'db' | 'engine' | 'sliceLock'>;
  /** Whose statements read and write the slices' ledger rows. @defaultValue a Ledger of `warehouse` */
  readonly ledger?: Ledger;
  /** Rows per INSERT (SQLite), or per chunk of COPY data (Postgres) or LOAD DATA file (MySQL). @defaultValue 500 */
  readonly batchRows?: number;
  /** Most slices one transaction commits together (see {@link CommitGroups}); 1, a transaction each. @defaultValue 50 */
  readonly slicesPerCommit?: number;
  /** Told when the upkeep after a commit failed (see {@link CommitGroupsOptions.onUpkeepError}). */
  readonly onUpkeepError?: (error: unknown) => void;
}

/** A file's rows to replace a slice's with (see {@link SliceLoader.replaceRows}). */
export interface SliceRowsLoad<Rows> {
  readonly slice: Slice;
  readonly definition: ReportDefinition;
  readonly rows: Rows;
  readonly file: ExportFileFacts;
  /** Attempts it took, this one included. */
  readonly attempts: number;
}

/** A downloaded file to load (see {@link SliceLoader.loadExport}). */
export interface ExportFileLoad extends SliceRowsLoad<SliceRows> {
  /** Replace the slice's rows even when the ledger says this file is loaded already. */
  readonly force?: boolean;
  readonly durationMs?: number;
  /** The data-quality checks, tallied as the rows stream in. */
  readonly checks?: SliceCheckTally;
  /**
   * What is known of the file's size: the engine decides from it how big a transaction it may
   * share (see `TransactionRules.small`). @defaultValue neither in memory nor compressed
   */
  readonly source?: { readonly heldInMemory: boolean; readonly compressed: boolean };
}

/** An empty answer to record (see {@link SliceLoader.recordEmptyAnswer}). */
export interface EmptyAnswer {
  readonly slice: Slice;
  readonly definition: ReportDefinition;
  readonly format: ExportFormat;
  readonly attempts: number;
  /** Believe an empty answer for a slice whose rows the warehouse holds (`warehouse.acceptEmptyRestatements`). */
  readonly acceptRestatement: boolean;
  readonly durationMs?: number;
}

/** What a failed slice's ledger row says besides its reason (see {@link SliceLoader.recordFailure}). */
export interface FailureRecord {
  /** Attempts it took, this one included. */
  readonly attempts: number;
  readonly durationMs?: number | null;
  /** The data-quality results of a file refused by one (QUALITY_CHECK_FAILED). */
  readonly checks?: readonly SliceCheckResult[];
}

/**
 * Writes slices and their ledger rows. A slice's rows and its ledger row are written together in
 * one transaction (with other slices' writes, each in a savepoint of its own: see
 * {@link CommitGroups}), so a crash leaves a slice either as it was or wholly new; and each write
 * starts by taking the slice's lock (see `SliceLock`: Postgres, an advisory lock keyed by the
 * slice; SQLite, the database's write lock), so two processes that reach the same slice write it
 * one after the other: the second sees the ledger as the first left it, and decides (the same
 * file again, no data again) from that.
 *
 * Rows go through the engine's `RowWriter` (SQLite: multi-row INSERTs; Postgres: COPY; MySQL: LOAD DATA LOCAL INFILE where the server allows it); how big
 * and how many its transactions may be, the engine's `TransactionRules` say. The ledger's
 * statements are the `LedgerWriter`'s. The slice's DELETE and row count are built and compiled by
 * Kysely once per loader and re-run with each slice's values (see {@link ReusableStatement}).
 */
export class SliceLoader {
  readonly #db: Kysely<Warehouse>;
  readonly #engine: WarehouseEngine;
  readonly #ledger: LedgerWriter;
  readonly #batchRows: number;
  readonly #groups: CommitGroups;
  /** The slice's DELETE per table, compiled once. */
  readonly #deletes = new Map<string, ReusableStatement<SliceKey>>();
  /** The count of a slice's rows per table, compiled once. */
  readonly #counts = new Map<string, ReusableStatement<SliceKey>>();

  constructor(options: SliceLoaderOptions) {
    this.#engine = options.warehouse.engine;
    this.#db = options.warehouse.db;
    this.#ledger = (options.ledger ?? new Ledger(options.warehouse)).writer;
    this.#batchRows = options.batchRows ?? 500;
    this.#groups = new CommitGroups({
      db: this.#db,
      sliceLock: options.warehouse.sliceLock,
      maxSlices: options.slicesPerCommit ?? 50,
      maxOpenMs: MAX_OPEN_MS,
      parallel: this.#engine.transactions.parallel,
      savepointReplacesItsName: this.#engine.transactions.savepointReplacesItsName,
      onUpkeepError: options.onUpkeepError,
    });
  }

  /** Whether the warehouse also takes rows already written as COPY text (see `RowWriter.takesCopyText`). */
  get takesCopyText(): boolean {
    return this.#engine.rowWriter.takesCopyText;
  }

  /** What the warehouse's decimal columns keep exactly (see `RowWriter.decimals`). */
  get decimals(): DecimalCapacity {
    return this.#engine.rowWriter.decimals;
  }

  /**
   * Replaces the slice's rows with `rows` and records it `loaded`. If `rows` throws (a bad
   * record), nothing of the file is written and the earlier rows stay.
   * @returns the number of rows written
   */
  async replaceRows(load: SliceRowsLoad<AsyncIterable<WarehouseRow>>): Promise<number> {
    const columns = rowColumns(load.definition);
    async function* values(): AsyncGenerator<RowValues> {
      for await (const row of load.rows) yield columns.map((column) => row[column] ?? null);
    }
    return this.replaceRowValues({ ...load, rows: values() });
  }

  /**
   * {@link replaceRows} with each row's values in the order of `rowColumns(definition)` (as
   * `createRowValuesBuilder` hands them), the way a big file is loaded: no object per row.
   * Each array is read before the next is asked for, and not kept.
   * @returns the number of rows written
   */
  async replaceRowValues(load: SliceRowsLoad<AsyncIterable<RowValues>>): Promise<number> {
    const { slice } = load;
    return this.#write(slice, `loading ${describeSlice(slice)}`, { rows: 'stream' }, async (trx, now) => {
      const { definition, rows, file, attempts } = load;
      const replaced = await this.#replace(trx, { slice, definition, rows, file, attempts, now, durationMs: null, everAttempted: true, previousLoad: 'unread' });
      return replaced.rowCount;
    });
  }

  /**
   * Loads a downloaded file, deciding under the slice's lock what it changes: the file the
   * ledger already records as loaded (same SHA-256, and the table still holding its rows) only
   * moves `checked_at`; anything else replaces the slice's rows whole. Deciding under the lock is
   * what makes a second process with the same file a no-op instead of a second copy.
   */
  async loadExport(load: ExportFileLoad): Promise<ExportLoad> {
    const { slice, definition, file, attempts, checks } = load;
    const durationMs = load.durationMs ?? null;
    const write: SliceWrite = { rows: 'file', heldInMemory: load.source?.heldInMemory === true, compressed: load.source?.compressed === true };
    return this.#write(slice, `loading ${describeSlice(slice)}`, write, async (trx, now, smallTransaction) => {
      let replacedMismatch: ExportLoad['replacedMismatch'];
      // A slice the ledger has never seen has no checks recorded either (see #replace).
      let everAttempted = true;
      // What rowCountDrop compares with, read together with the slice's own ledger row when both are needed.
      let previousLoad: PreviousLoadRead = 'unread';
      if (!load.force) {
        let previous: LoadedFileRow | undefined;
        if (checks?.comparesRowCount === true) {
          const read = await this.#ledger.readWithPrevious(trx, slice);
          previous = read.row;
          previousLoad = read.previous;
        } else {
          previous = await this.#ledger.read(trx, slice);
        }
        everAttempted = previous !== undefined;
        if (previous?.status === 'loaded' && previous.content_sha256 === file.sha256) {
          const held = await this.#countHeldRows(trx, slice, definition);
          if (held === previous.row_count) {
            await this.#ledger.touch(trx, { slice, now, attempts, durationMs });
            return { rowCount: previous.row_count, unchanged: true };
          }
          replacedMismatch = { heldRows: held, ledgerRows: previous.row_count };
        }
      }
      if (smallTransaction) await this.#checkHeldRowsAreFew(trx, slice, definition, replacedMismatch?.heldRows);
      // Each field named, no spread: properties written after a spread take V8's slow path.
      const replacement: Replacement = { slice, definition, rows: load.rows, file, attempts, checks, now, durationMs, everAttempted, previousLoad };
      const replaced = await this.#replace(trx, replacement);
      return { rowCount: replaced.rowCount, unchanged: false, replacedMismatch, checks: replaced.checks };
    });
  }

  /**
   * Records an empty answer under the slice's lock: `no_data`, or only `checked_at` when the
   * ledger already says `no_data`. A slice whose rows the warehouse holds keeps them unless
   * `acceptRestatement`: the answer is then `refused`, with the ledger row that holds them.
   */
  async recordEmptyAnswer(answer: EmptyAnswer): Promise<EmptyAnswerRecord> {
    const { slice, definition, format, attempts } = answer;
    const durationMs = answer.durationMs ?? null;
    return this.#write(slice, `recording no data for ${describeSlice(slice)}`, { rows: 'none' }, async (trx, now, smallTransaction) => {
      const previous = await this.#ledger.read(trx, slice);
      if (previous && previous.row_count > 0 && !answer.acceptRestatement) return { kind: 'refused', previous };
      const stamp = { slice, now, attempts, durationMs };
      if (previous?.status === 'no_data') {
        await this.#ledger.touch(trx, stamp);
        return { kind: 'unchanged' };
      }
      if (smallTransaction) await this.#checkHeldRowsAreFew(trx, slice, definition);
      await this.#replaceWithNoData(trx, stamp, { definition, format });
      return { kind: 'recorded' };
    });
  }

  /** Records `no_data` (an empty body) and removes any rows the slice had. */
  async recordNoData(slice: Slice, definition: ReportDefinition, format: ExportFormat, attempts: number): Promise<void> {
    await this.#write(slice, `recording no data for ${describeSlice(slice)}`, { rows: 'none' }, async (trx, now, smallTransaction) => {
      if (smallTransaction) await this.#checkHeldRowsAreFew(trx, slice, definition);
      await this.#replaceWithNoData(trx, { slice, now, attempts, durationMs: null }, { definition, format });
    });
  }

  /**
   * Records `failed` with its reason (`CODE: what to check`, the code also kept in `error_code`);
   * rows loaded earlier, and the ledger's facts about them, stay. `checks` are the data-quality
   * results of a file refused by one (QUALITY_CHECK_FAILED), recorded in the same transaction.
   */
  async recordFailure(slice: Slice, reason: string, record: FailureRecord): Promise<void> {
    await this.#write(slice, `recording the failure of ${describeSlice(slice)}`, { rows: 'none' }, async (trx, now) => {
      await this.#ledger.recordFailure(trx, { slice, now, attempts: record.attempts, durationMs: record.durationMs ?? null }, reason);
      if (record.checks) await this.#ledger.recordChecks(trx, { slice, now }, record.checks);
    });
  }

  /**
   * Deletes the slice's rows, writes the new ones and the ledger row, inside the caller's locked
   * transaction: a new load, whose id the rows and the ledger row share (`load_id`). A UUID made
   * here rather than a database sequence: SQLite has none, and it needs no round trip. With
   * `checks` (tallied as the rows stream in), the file is judged after its last row and before the
   * ledger row: a check set to `fail` that it misses throws {@link QualityCheckError}, which rolls
   * the transaction back (the earlier rows stay); otherwise the results are recorded with the
   * ledger row (replacing the earlier ones, unless the slice was never attempted: a night's new
   * slices save the DELETE).
   */
  async #replace(trx: Kysely<Warehouse>, load: Replacement): Promise<{ rowCount: number; checks: readonly SliceCheckResult[] }> {
    const { slice, definition, file, checks } = load;
    const loadId = randomUUID();
    await trx.executeQuery(this.#deleteRows(definition).with(sliceKey(slice)));
    const rowCount = await this.#engine.rowWriter.write(trx, { definition, rows: load.rows, batchRows: this.#batchRows, loadId });
    let results: readonly SliceCheckResult[] = [];
    if (checks) {
      const { previousLoad } = load;
      const previous = !checks.comparesRowCount ? undefined : previousLoad === 'unread' ? await this.#ledger.previousLoad(trx, slice) : previousLoad;
      const repeated = checks.uniqueColumn !== undefined && checks.mayRepeat ? await countRepeatedValues(trx, definition, sliceKey(slice), checks.uniqueColumn) : undefined;
      results = checks.evaluate({ previous, repeated });
      if (results.some((result) => result.outcome === 'fail')) throw new QualityCheckError(slice, file.fileName, results);
    }
    const stamp = { slice, now: load.now, attempts: load.attempts, durationMs: load.durationMs };
    await this.#ledger.recordLoaded(trx, stamp, { file, rowCount, loadId });
    if (checks) await this.#ledger.recordChecks(trx, stamp, results, { replace: load.everAttempted });
    return { rowCount, checks: results };
  }

  async #replaceWithNoData(trx: Kysely<Warehouse>, stamp: LedgerStamp, answer: { readonly definition: ReportDefinition; readonly format: ExportFormat }): Promise<void> {
    await trx.executeQuery(this.#deleteRows(answer.definition).with(sliceKey(stamp.slice)));
    await this.#ledger.recordNoData(trx, stamp, answer.format);
    // The checks of rows that are gone would describe nothing the warehouse holds.
    await this.#ledger.recordChecks(trx, stamp, []);
  }

  /**
   * In a small transaction, before the slice's rows are replaced: SQLite keeps the pages a small
   * transaction changes in memory until its COMMIT (see `SqliteSliceLock.begin`), and deleting a
   * big slice's rows would change all of theirs. Such a slice is handed back, before anything of it
   * is written, to run in a transaction that is not small. Counted, not read from the ledger: rows
   * the ledger does not know of (a ledger row deleted by hand) are deleted too.
   * @param counted the slice's rows, when this transaction has counted them already
   * @throws NotASmallSlice when the slice holds more rows than the engine's `smallMaxHeldRows`
   */
  async #checkHeldRowsAreFew(trx: Kysely<Warehouse>, slice: Slice, definition: ReportDefinition, counted?: number): Promise<void> {
    const held = counted ?? (await this.#countHeldRows(trx, slice, definition));
    if (held > this.#engine.transactions.smallMaxHeldRows) throw new NotASmallSlice(held);
  }

  /** How many rows the definition's table holds for the slice. */
  async #countHeldRows(trx: Kysely<Warehouse>, slice: Slice, definition: ReportDefinition): Promise<number> {
    const counted = await trx.executeQuery<{ rows: number | string }>(this.#countRows(definition).with(sliceKey(slice)));
    return Number(counted.rows[0]?.rows ?? 0);
  }

  /** The DELETE of a slice's rows from the definition's table. */
  #deleteRows(definition: ReportDefinition): ReusableStatement<SliceKey> {
    let statement = this.#deletes.get(definition.table);
    if (statement === undefined) {
      // The table is chosen by the definition, so Kysely cannot know its row type here.
      const db = this.#db as unknown as Kysely<Record<string, WarehouseRow>>;
      statement = ReusableStatement.compile<SliceKey>(SLICE_KEY, (key) => {
        let query = db.deleteFrom(definition.table).where('portfolio_id', '=', key.portfolio_id).where('report_date', '=', key.report_date);
        if (definition.storesReportType) query = query.where('report_type', '=', key.report_type);
        return query;
      });
      this.#deletes.set(definition.table, statement);
    }
    return statement;
  }

  /** The count of a slice's rows in the definition's table. */
  #countRows(definition: ReportDefinition): ReusableStatement<SliceKey> {
    let statement = this.#counts.get(definition.table);
    if (statement === undefined) {
      const db = this.#db as unknown as Kysely<Record<string, WarehouseRow>>;
      statement = ReusableStatement.compile<SliceKey>(SLICE_KEY, (key) => {
        let query = db
          .selectFrom(definition.table)
          .select(({ fn }) => fn.countAll().as('rows'))
          .where('portfolio_id', '=', key.portfolio_id)
          .where('report_date', '=', key.report_date);
        if (definition.storesReportType) query = query.where('report_type', '=', key.report_type);
        return query;
      });
      this.#counts.set(definition.table, statement);
    }
    return statement;
  }

  /**
   * Runs `work` with the slice's lock held, in a transaction it may share with other slices'
   * writes (see {@link CommitGroups}); resolves once that transaction has committed. `work` is
   * given the warehouse's clock, read under the lock (see `warehouseNow`), and whether its
   * transaction is a small one (the engine allows one for `write`, see `TransactionRules.small`):
   * then it must call {@link #checkHeldRowsAreFew} before it deletes rows.
   */
  async #write<T>(slice: Slice, action: string, write: SliceWrite, work: SliceWork<T>): Promise<T> {
    try {
      return await this.#groups.write(slice, work, { small: this.#engine.transactions.small(write) });
    } catch (error) {
      // A bad record thrown from the row stream is the file's fault, not the database's.
      if (error instanceof SyncError) throw error;
      throw classifyWarehouseError(error, action);
    }
  }
}

/** What {@link SliceLoader.loadExport} did with a file. */
export interface ExportLoad {
  /** The rows the warehouse holds for the slice now. */
  readonly rowCount: number;
  /** The file was the one already loaded: nothing but `checked_at` and `attempts` was written. */
  readonly unchanged: boolean;
  /**
   * Set when the file was the one already loaded but the table no longer held the rows the ledger
   * records (deleted, or an older backup restored), so it was loaded again.
   */
  readonly replacedMismatch?: { readonly heldRows: number; readonly ledgerRows: number };
  /** The file's data-quality results (none when it was unchanged, or loaded without checks); none of them `fail`. */
  readonly checks?: readonly SliceCheckResult[];
}

/** What {@link SliceLoader.recordEmptyAnswer} did. */
export type EmptyAnswerRecord =
  | { readonly kind: 'recorded' | 'unchanged' }
  /** The warehouse holds rows of the slice, kept: `previous` is their ledger row. */
  | { readonly kind: 'refused'; readonly previous: ReportLoadsRow };

/** A transaction takes no more slices once open this long, so another process's writer is not kept waiting. */
const MAX_OPEN_MS = 250;

/** The previous load as read with the slice's ledger row (undefined: there is none), or `unread`. */
type PreviousLoadRead = PreviousLoad | undefined | 'unread';

/** What {@link SliceLoader.#replace} writes: the file's rows, and the ledger row's facts. */
interface Replacement extends SliceRowsLoad<SliceRows> {
  readonly now: string;
  readonly durationMs: number | null;
  readonly checks?: SliceCheckTally;
  /** The slice has a ledger row (so maybe checks to replace). */
  readonly everAttempted: boolean;
  readonly previousLoad: PreviousLoadRead;
}

/** A slice as the warehouse's columns name it. */
type SliceKey = Pick<ReportLoadsRow, 'portfolio_id' | 'report_type' | 'report_date'>;

const SLICE_KEY: readonly (keyof SliceKey)[] = ['portfolio_id', 'report_type', 'report_date'];

function sliceKey(slice: Slice): SliceKey {
  return { portfolio_id: slice.portfolioId, report_type: slice.reportType, report_date: slice.reportDate };
}
