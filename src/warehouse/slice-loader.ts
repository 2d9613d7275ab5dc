import { CompiledQuery, PostgresIntrospector, sql, type Kysely } from 'kysely';
import { SyncError } from '../errors.js';
import type { ReportDefinition } from '../reports/report-definition.js';
import { rowColumns, type RowValues, type WarehouseRow } from '../extract/row-builder.js';
import type { ExportFormat } from '../reports/report-types.js';
import { describeSlice, type Slice } from '../slice.js';
import { classifyWarehouseError } from './classify-warehouse-error.js';
import { CopyFromStdin } from './copy-from-stdin.js';
import { copyTextRow } from './copy-text-row.js';
import { errorCodeOf } from './ledger-error.js';
import { ReusableStatement } from './reusable-statement.js';
import { warehouseNow } from './warehouse-now.js';
import type { ReportLoadsRow, Warehouse } from './warehouse-schema.js';

/** What is known about a downloaded export file, for the ledger. */
export interface ExportFileFacts {
  readonly format: ExportFormat;
  /** From Content-Disposition, when the service gave one. */
  readonly fileName: string | null;
  readonly bytes: number;
  readonly sha256: string;
}

export interface SliceLoaderOptions {
  readonly db: Kysely<Warehouse>;
  /** Rows per INSERT (SQLite), or per chunk of COPY data (Postgres). @defaultValue 500 */
  readonly batchRows?: number;
}

/**
 * Writes slices and their ledger rows. Each write is one transaction holding the slice's rows
 * and its ledger row together, so a crash leaves a slice either as it was or wholly new; and
 * each starts by taking the slice's lock (Postgres: an advisory transaction lock keyed by the
 * slice; SQLite: the database's write lock, `BEGIN IMMEDIATE`), so two processes that reach the
 * same slice write it one after the other: the second sees the ledger as the first left it.
 *
 * Rows take the fastest path each dialect has, every statement still compiled by Kysely with
 * its values as parameters or data: SQLite runs one multi-row INSERT compiled once and executed
 * again with each batch's values (the warehouse keeps it prepared); Postgres streams the rows
 * with `COPY … FROM STDIN` in text format (see {@link copyTextRow} for the escaping), which
 * needs a warehouse opened by `openWarehouse`. The small statements every slice runs (the
 * slice's DELETE, the ledger's SELECT, upsert and update) are built and compiled by Kysely once
 * per loader and re-run with each slice's values (see {@link ReusableStatement}).
 */
export class SliceLoader {
  readonly #db: Kysely<Warehouse>;
  readonly #batchRows: number;
  readonly #copies: boolean;
  /** The SQL of an INSERT per table and row count, compiled once: full batches, and the last, shorter batch of each slice. */
  readonly #insertSql = new Map<string, string>();
  /** The slice's DELETE per table, compiled once. */
  readonly #deletes = new Map<string, ReusableStatement<SliceKey>>();
  /** The count of a slice's rows per table, compiled once. */
  readonly #counts = new Map<string, ReusableStatement<SliceKey>>();
  readonly #selectLedger: ReusableStatement<SliceKey>;
  readonly #upsertLedger: ReusableStatement<ReportLoadsRow>;
  readonly #touchLedger: ReusableStatement<SliceKey & Pick<ReportLoadsRow, 'checked_at' | 'attempts' | 'duration_ms'>>;

  constructor(options: SliceLoaderOptions) {
    const db = options.db;
    this.#db = db;
    this.#batchRows = options.batchRows ?? 500;
    this.#copies = db.introspection instanceof PostgresIntrospector;
    this.#selectLedger = ReusableStatement.compile<SliceKey>(SLICE_KEY, (key) =>
      db
        .selectFrom('report_loads')
        .selectAll()
        .where('portfolio_id', '=', key.portfolio_id)
        .where('report_type', '=', key.report_type)
        .where('report_date', '=', key.report_date),
    );
    this.#upsertLedger = ReusableStatement.compile<ReportLoadsRow>(LEDGER_COLUMNS, (row) =>
      db
        .insertInto('report_loads')
        .values(row)
        .onConflict((oc) =>
          oc.columns(['portfolio_id', 'report_type', 'report_date']).doUpdateSet((eb) => ({
            status: eb.ref('excluded.status'),
            row_count: eb.ref('excluded.row_count'),
            format: eb.ref('excluded.format'),
            file_name: eb.ref('excluded.file_name'),
            bytes: eb.ref('excluded.bytes'),
            content_sha256: eb.ref('excluded.content_sha256'),
            attempts: eb.ref('excluded.attempts'),
            error: eb.ref('excluded.error'),
            error_code: eb.ref('excluded.error_code'),
            first_loaded_at: sql`coalesce(report_loads.first_loaded_at, excluded.first_loaded_at)`,
            updated_at: eb.ref('excluded.updated_at'),
            checked_at: eb.ref('excluded.checked_at'),
            duration_ms: eb.ref('excluded.duration_ms'),
          })),
        ),
    );
    this.#touchLedger = ReusableStatement.compile<SliceKey & Pick<ReportLoadsRow, 'checked_at' | 'attempts' | 'duration_ms'>>([...SLICE_KEY, 'checked_at', 'attempts', 'duration_ms'], (values) =>
      db
        .updateTable('report_loads')
        .set({ checked_at: values.checked_at, attempts: values.attempts, duration_ms: values.duration_ms })
        .where('portfolio_id', '=', values.portfolio_id)
        .where('report_type', '=', values.report_type)
        .where('report_date', '=', values.report_date),
    );
  }

  /** The slice's ledger row, if it was ever attempted. */
  async ledgerEntry(slice: Slice): Promise<ReportLoadsRow | undefined> {
    try {
      const result = await this.#db.executeQuery(this.#selectLedger.with<ReportLoadsRow>(ledgerKey(slice)));
      return result.rows[0];
    } catch (error) {
      throw classifyWarehouseError(error, `reading the ledger for ${describeSlice(slice)}`);
    }
  }

  /**
   * Replaces the slice's rows with `rows` and records it `loaded`. If `rows` throws (a bad
   * record), nothing of the file is written and the earlier rows stay.
   * @returns the number of rows written
   */
  async replaceRows(
    slice: Slice,
    definition: ReportDefinition,
    rows: AsyncIterable<WarehouseRow>,
    file: ExportFileFacts,
    attempts: number,
  ): Promise<number> {
    const columns = rowColumns(definition);
    async function* values(): AsyncGenerator<RowValues> {
      for await (const row of rows) yield columns.map((column) => row[column] ?? null);
    }
    return this.replaceRowValues(slice, definition, values(), file, attempts);
  }

  /**
   * {@link replaceRows} with each row's values in the order of `rowColumns(definition)` (as
   * `createRowValuesBuilder` hands them), the way a big file is loaded: no object per row.
   * Each array is read before the next is asked for, and not kept.
   * @returns the number of rows written
   */
  async replaceRowValues(
    slice: Slice,
    definition: ReportDefinition,
    rows: AsyncIterable<RowValues>,
    file: ExportFileFacts,
    attempts: number,
  ): Promise<number> {
    return this.#write(slice, `loading ${describeSlice(slice)}`, (trx, now) => this.#replace(trx, now, slice, definition, rows, file, attempts, null));
  }

  /**
   * Loads a downloaded file, deciding under the slice's lock what it changes: the file the
   * ledger already records as loaded (same SHA-256, and the table still holding its rows) only
   * moves `checked_at`; anything else replaces the slice's rows whole. Deciding under the lock is
   * what makes a second process with the same file a no-op instead of a second copy.
   */
  async loadExport(
    slice: Slice,
    definition: ReportDefinition,
    rows: AsyncIterable<RowValues>,
    file: ExportFileFacts,
    attempts: number,
    options: { readonly force?: boolean; readonly durationMs?: number } = {},
  ): Promise<ExportLoad> {
    const durationMs = options.durationMs ?? null;
    return this.#write(slice, `loading ${describeSlice(slice)}`, async (trx, now) => {
      let replacedMismatch: ExportLoad['replacedMismatch'];
      if (!options.force) {
        const previous = await selectOne<ReportLoadsRow>(trx, this.#selectLedger.with(ledgerKey(slice)));
        if (previous?.status === 'loaded' && previous.content_sha256 === file.sha256) {
          const held = Number((await selectOne<{ rows: number | string }>(trx, this.#countRows(definition).with(ledgerKey(slice))))?.rows ?? 0);
          if (held === previous.row_count) {
            await trx.executeQuery(this.#touchLedger.with({ ...ledgerKey(slice), checked_at: now, attempts, duration_ms: durationMs }));
            return { rowCount: previous.row_count, unchanged: true };
          }
          replacedMismatch = { heldRows: held, ledgerRows: previous.row_count };
        }
      }
      const rowCount = await this.#replace(trx, now, slice, definition, rows, file, attempts, durationMs);
      return { rowCount, unchanged: false, replacedMismatch };
    });
  }

  /**
   * Records an empty answer under the slice's lock: `no_data`, or only `checked_at` when the
   * ledger already says `no_data`. A slice whose rows the warehouse holds keeps them unless
   * `acceptRestatement`: the answer is then `refused`, with the ledger row that holds them.
   */
  async recordEmptyAnswer(
    slice: Slice,
    definition: ReportDefinition,
    format: ExportFormat,
    attempts: number,
    options: { readonly acceptRestatement: boolean; readonly durationMs?: number },
  ): Promise<EmptyAnswerRecord> {
    const durationMs = options.durationMs ?? null;
    return this.#write(slice, `recording no data for ${describeSlice(slice)}`, async (trx, now) => {
      const previous = await selectOne<ReportLoadsRow>(trx, this.#selectLedger.with(ledgerKey(slice)));
      if (previous && previous.row_count > 0 && !options.acceptRestatement) return { kind: 'refused', previous };
      if (previous?.status === 'no_data') {
        await trx.executeQuery(this.#touchLedger.with({ ...ledgerKey(slice), checked_at: now, attempts, duration_ms: durationMs }));
        return { kind: 'unchanged' };
      }
      await this.#replaceWithNoData(trx, now, slice, definition, format, attempts, durationMs);
      return { kind: 'recorded' };
    });
  }

  /** Deletes the slice's rows, writes the new ones and the ledger row, inside the caller's locked transaction. */
  async #replace(
    trx: Kysely<Warehouse>,
    now: string,
    slice: Slice,
    definition: ReportDefinition,
    rows: AsyncIterable<RowValues>,
    file: ExportFileFacts,
    attempts: number,
    durationMs: number | null,
  ): Promise<number> {
    await trx.executeQuery(this.#deleteRows(definition).with(ledgerKey(slice)));
    const columns = rowColumns(definition);
    const rowCount = this.#copies
      ? await copyRows(trx, definition, columns, rows, this.#batchRows)
      : await this.#insertRows(trx, definition, columns, rows);
    await this.#recordOutcome(trx, slice, now, attempts, durationMs, {
      status: 'loaded',
      row_count: rowCount,
      format: file.format,
      file_name: file.fileName,
      bytes: file.bytes,
      content_sha256: file.sha256,
      first_loaded_at: now,
    });
    return rowCount;
  }

  /** Records `no_data` (an empty body) and removes any rows the slice had. */
  async recordNoData(slice: Slice, definition: ReportDefinition, format: ExportFormat, attempts: number): Promise<void> {
    await this.#write(slice, `recording no data for ${describeSlice(slice)}`, (trx, now) => this.#replaceWithNoData(trx, now, slice, definition, format, attempts, null));
  }

  async #replaceWithNoData(
    trx: Kysely<Warehouse>,
    now: string,
    slice: Slice,
    definition: ReportDefinition,
    format: ExportFormat,
    attempts: number,
    durationMs: number | null,
  ): Promise<void> {
    await trx.executeQuery(this.#deleteRows(definition).with(ledgerKey(slice)));
    await this.#recordOutcome(trx, slice, now, attempts, durationMs, {
      status: 'no_data',
      row_count: 0,
      format,
      file_name: null,
      bytes: 0,
      content_sha256: null,
      first_loaded_at: null,
    });
  }

  /** Upserts the slice's ledger row for a new outcome with rows (or none): no error, checked and changed now. */
  async #recordOutcome(
    trx: Kysely<Warehouse>,
    slice: Slice,
    now: string,
    attempts: number,
    durationMs: number | null,
    facts: Pick<ReportLoadsRow, 'status' | 'row_count' | 'format' | 'file_name' | 'bytes' | 'content_sha256' | 'first_loaded_at'>,
  ): Promise<void> {
    await trx.executeQuery(this.#upsertLedger.with({ ...ledgerKey(slice), ...facts, attempts, error: null, error_code: null, updated_at: now, checked_at: now, duration_ms: durationMs }));
  }

  /**
   * Records `failed` with its reason (`CODE: what to check`, the code also kept in `error_code`);
   * rows loaded earlier, and the ledger's facts about them, stay.
   */
  async recordFailure(slice: Slice, reason: string, attempts: number, durationMs: number | null = null): Promise<void> {
    await this.#write(slice, `recording the failure of ${describeSlice(slice)}`, async (trx, now) => {
      await trx
        .insertInto('report_loads')
        .values({
          ...ledgerKey(slice),
          status: 'failed',
          row_count: 0,
          format: null,
          file_name: null,
          bytes: null,
          content_sha256: null,
          attempts,
          error: reason,
          error_code: errorCodeOf(reason),
          first_loaded_at: null,
          updated_at: now,
          checked_at: now,
          duration_ms: durationMs,
        })
        .onConflict((oc) =>
          oc.columns(['portfolio_id', 'report_type', 'report_date']).doUpdateSet({
            status: 'failed',
            attempts,
            error: reason,
            error_code: errorCodeOf(reason),
            updated_at: now,
            checked_at: now,
            duration_ms: durationMs,
          }),
        )
        .execute();
    });
  }

  /** Multi-row INSERTs of `batchRows` rows, one SQL text for every full batch. */
  async #insertRows(trx: Kysely<Warehouse>, definition: ReportDefinition, columns: readonly string[], rows: AsyncIterable<RowValues>): Promise<number> {
    const batchRows = this.#batchRows;
    const fullBatchSql = this.#insertSqlFor(trx, definition, columns, batchRows);
    let rowCount = 0;
    let inBatch = 0;
    let parameters: (string | number | null)[] = [];
    for await (const row of rows) {
      for (let i = 0; i < columns.length; i += 1) parameters.push(row[i] ?? null);
      inBatch += 1;
      if (inBatch === batchRows) {
        await trx.executeQuery(CompiledQuery.raw(fullBatchSql, parameters));
        rowCount += inBatch;
        inBatch = 0;
        parameters = [];
      }
    }
    if (inBatch > 0) {
      await trx.executeQuery(CompiledQuery.raw(this.#insertSqlFor(trx, definition, columns, inBatch), parameters));
      rowCount += inBatch;
    }
    return rowCount;
  }

  /**
   * The INSERT of `count` rows into the definition's table, compiled on first use. At most
   * `batchRows` texts per table: small slices all end in a shorter batch, usually of a few sizes.
   */
  #insertSqlFor(trx: Kysely<Warehouse>, definition: ReportDefinition, columns: readonly string[], count: number): string {
    const key = `${definition.table} ${count}`;
    let text = this.#insertSql.get(key);
    if (text === undefined) {
      text = compileInsert(trx, definition, columns, count);
      this.#insertSql.set(key, text);
    }
    return text;
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
   * Runs `work` in a transaction of its own that first takes the slice's lock (see the class
   * comment); the lock is released by the COMMIT or ROLLBACK. Kysely's `transaction()` cannot
   * begin SQLite's IMMEDIATE kind, hence the explicit statements on one connection. `work` is
   * given the warehouse's clock, read under the lock (see {@link warehouseNow}).
   */
  async #write<T>(slice: Slice, action: string, work: (trx: Kysely<Warehouse>, now: string) => Promise<T>): Promise<T> {
    try {
      return await this.#db.connection().execute(async (connection) => {
        await connection.executeQuery(this.#copies ? BEGIN : BEGIN_IMMEDIATE);
        try {
          const now = this.#copies ? await lockSliceAndReadClock(connection, slice) : await warehouseNow(connection);
          const result = await work(connection, now);
          await connection.executeQuery(COMMIT);
          return result;
        } catch (error) {
          // The error that ended the work is the one to report; a rollback on a broken connection adds nothing.
          await connection.executeQuery(ROLLBACK).catch(() => undefined);
          throw error;
        }
      });
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
}

/** What {@link SliceLoader.recordEmptyAnswer} did. */
export type EmptyAnswerRecord =
  | { readonly kind: 'recorded' | 'unchanged' }
  /** The warehouse holds rows of the slice, kept: `previous` is their ledger row. */
  | { readonly kind: 'refused'; readonly previous: ReportLoadsRow };

const BEGIN = CompiledQuery.raw('begin');
/** Takes SQLite's write lock at once, so the ledger read that follows cannot be overtaken by another writer. */
const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/**
 * Takes Postgres's lock on one slice until the transaction ends, and reads the warehouse's clock in
 * the same round trip. The lock is keyed by a 64-bit hash of the slice, namespaced so that another
 * application's advisory locks are unlikely to meet ours (a collision would only make two slices
 * wait for each other, never mix them).
 */
async function lockSliceAndReadClock(db: Kysely<Warehouse>, slice: Slice): Promise<string> {
  const row = await selectOne<{ now: Date | string }>(
    db,
    CompiledQuery.raw('select pg_advisory_xact_lock(hashtextextended($1, 0)), now() as now', [
      `report-sync slice ${slice.portfolioId} ${slice.reportType} ${slice.reportDate}`,
    ]),
  );
  return new Date(row!.now).toISOString();
}

async function selectOne<R>(db: Kysely<Warehouse>, query: CompiledQuery): Promise<R | undefined> {
  const result = await db.executeQuery<R>(query);
  return result.rows[0];
}

/** A slice as the warehouse's columns name it. */
type SliceKey = Pick<ReportLoadsRow, 'portfolio_id' | 'report_type' | 'report_date'>;

const SLICE_KEY: readonly (keyof SliceKey)[] = ['portfolio_id', 'report_type', 'report_date'];

/** Every column of the ledger, in table order. */
const LEDGER_COLUMNS: readonly (keyof ReportLoadsRow)[] = [
  ...SLICE_KEY,
  'status',
  'row_count',
  'format',
  'file_name',
  'bytes',
  'content_sha256',
  'attempts',
  'error',
  'error_code',
  'first_loaded_at',
  'updated_at',
  'checked_at',
  'duration_ms',
];

function ledgerKey(slice: Slice): SliceKey {
  return { portfolio_id: slice.portfolioId, report_type: slice.reportType, report_date: slice.reportDate };
}

/** The SQL of an INSERT of `count` rows; Kysely makes every value a parameter. */
function compileInsert(trx: Kysely<Warehouse>, definition: ReportDefinition, columns: readonly string[], count: number): string {
  const placeholder: WarehouseRow = Object.fromEntries(columns.map((column) => [column, null]));
  return (trx as unknown as Kysely<Record<string, WarehouseRow>>)
    .insertInto(definition.table)
    .values(new Array<WarehouseRow>(count).fill(placeholder))
    .compile().sql;
}

/**
 * Streams the rows into the table with COPY on the transaction's connection. A row that fails
 * to build (a bad record) aborts the COPY with that error, and the transaction rolls back.
 * @returns the number of rows copied
 */
async function copyRows(
  trx: Kysely<Warehouse>,
  definition: ReportDefinition,
  columns: readonly string[],
  rows: AsyncIterable<RowValues>,
  batchRows: number,
): Promise<number> {
  let rowCount = 0;
  async function* chunks(): AsyncGenerator<string> {
    let chunk = '';
    let inChunk = 0;
    for await (const row of rows) {
      chunk += copyTextRow(row);
      rowCount += 1;
      inChunk += 1;
      if (inChunk === batchRows) {
        yield chunk;
        chunk = '';
        inChunk = 0;
      }
    }
    if (chunk !== '') yield chunk;
  }
  const statement = sql`copy ${sql.table(definition.table)} (${sql.join(columns.map((column) => sql.ref(column)))}) from stdin`.compile(trx);
  await trx.executeQuery(CompiledQuery.raw(statement.sql, [new CopyFromStdin(chunks())]));
  return rowCount;
}
