import { sql, type Kysely } from 'kysely';
import type { PreviousLoad } from '../../quality/slice-check-tally.js';
import type { SliceCheckResult } from '../../quality/slice-check-result.js';
import type { ExportFormat } from '../../reports/report-types.js';
import type { Slice } from '../../slice/slice.js';
import { LEDGER_COLUMNS } from '../schema/ledger-columns.js';
import { errorCodeOf } from '../schema/ledger-error.js';
import { ReusableStatement } from '../engine/reusable-statement.js';
import { SLICE_CHECK_COLUMNS } from '../schema/slice-check-columns.js';
import type { ReportLoadsRow, SliceChecksRow, Warehouse } from '../engine/warehouse-schema.js';

/** What a slice's ledger row says of the file it last loaded: enough to tell whether a download is that file again. */
export type LoadedFileRow = Pick<ReportLoadsRow, 'report_date' | 'status' | 'row_count' | 'content_sha256'>;

const LOADED_FILE_COLUMNS = ['report_date', 'status', 'row_count', 'content_sha256'] as const satisfies readonly (keyof LoadedFileRow)[];

/** What is known about a downloaded export file, for the ledger. */
export interface ExportFileFacts {
  readonly format: ExportFormat;
  /** From Content-Disposition, when the service gave one. */
  readonly fileName: string | null;
  readonly bytes: number;
  readonly sha256: string;
}

/**
 * The ledger's statements for one slice, run inside the slice's locked transaction (see
 * `SliceLoader`), so that what a write decides from the ledger row cannot be overtaken by another
 * process. Owned by the {@link Ledger}: every read and write of `report_loads` is the ledger's.
 * The statements a slice runs every time are built and compiled by Kysely once and re-run with
 * each slice's values (see {@link ReusableStatement}).
 */
export class LedgerWriter {
  readonly #select: ReusableStatement<SliceKey>;
  readonly #upsert: ReusableStatement<ReportLoadsRow>;
  readonly #touch: ReusableStatement<SliceKey & Pick<ReportLoadsRow, 'checked_at' | 'attempts' | 'duration_ms'>>;
  readonly #previousLoad: ReusableStatement<SliceKey>;
  readonly #selectWithPrevious: ReusableStatement<SliceKey>;
  readonly #deleteChecks: ReusableStatement<SliceKey>;
  /** The INSERT of a slice's check results, per number of results (a report table's checks are a fixed few). */
  readonly #insertChecks = new Map<number, CheckInsert>();
  readonly #db: Kysely<Warehouse>;

  constructor(db: Kysely<Warehouse>) {
    this.#db = db;
    // 'loaded' and the LIMIT are SQL literals here, not parameters: SQLite re-plans a statement
    // whenever a bound value could change its plan (whether the partial index report_loads_loaded
    // applies), and these two reads run for every slice: as literals they take about half the time
    // (see docs/performance.md).
    this.#previousLoad = ReusableStatement.compile<SliceKey>(SLICE_KEY, (key) =>
      db
        .selectFrom('report_loads')
        .select(['report_date', 'row_count'])
        .where('portfolio_id', '=', key.portfolio_id)
        .where('report_type', '=', key.report_type)
        .where('report_date', '<', key.report_date)
        .where('status', '=', sql.lit('loaded'))
        .orderBy('report_date', 'desc')
        .limit(sql.lit(1)),
    );
    this.#selectWithPrevious = ReusableStatement.compile<SliceKey>(SLICE_KEY, (key) =>
      db
        .selectFrom('report_loads')
        .select(LOADED_FILE_COLUMNS)
        .where('portfolio_id', '=', key.portfolio_id)
        .where('report_type', '=', key.report_type)
        .where('report_date', '<=', key.report_date)
        .where((eb) => eb.or([eb('report_date', '=', key.report_date), eb('status', '=', sql.lit('loaded'))]))
        .orderBy('report_date', 'desc')
        .limit(sql.lit(2)),
    );
    this.#deleteChecks = ReusableStatement.compile<SliceKey>(SLICE_KEY, (key) =>
      db.deleteFrom('slice_checks').where('portfolio_id', '=', key.portfolio_id).where('report_type', '=', key.report_type).where('report_date', '=', key.report_date),
    );
    this.#select = ReusableStatement.compile<SliceKey>(SLICE_KEY, (key) =>
      db.selectFrom('report_loads').selectAll().where('portfolio_id', '=', key.portfolio_id).where('report_type', '=', key.report_type).where('report_date', '=', key.report_date),
    );
    this.#upsert = ReusableStatement.compile<ReportLoadsRow>(LEDGER_COLUMNS, (row) =>
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
            load_id: eb.ref('excluded.load_id'),
            loaded_at: eb.ref('excluded.loaded_at'),
          })),
        ),
    );
    this.#touch = ReusableStatement.compile<SliceKey & Pick<ReportLoadsRow, 'checked_at' | 'attempts' | 'duration_ms'>>(
      [...SLICE_KEY, 'checked_at', 'attempts', 'duration_ms'],
      (values) =>
        db
          .updateTable('report_loads')
          .set({ checked_at: values.checked_at, attempts: values.attempts, duration_ms: values.duration_ms })
          .where('portfolio_id', '=', values.portfolio_id)
          .where('report_type', '=', values.report_type)
          .where('report_date', '=', values.report_date),
    );
  }

  /** The slice's ledger row as the transaction sees it, if the slice was ever attempted. */
  async read(trx: Kysely<Warehouse>, slice: Slice): Promise<ReportLoadsRow | undefined> {
    const result = await trx.executeQuery(this.#select.with<ReportLoadsRow>(ledgerKey(slice)));
    return result.rows[0];
  }

  /**
   * {@link read} and {@link previousLoad} in one statement (one walk down the ledger's key): the
   * slice's ledger row as far as its loaded file goes, and the latest earlier date of its portfolio
   * and report type that is `loaded`.
   */
  async readWithPrevious(trx: Kysely<Warehouse>, slice: Slice): Promise<{ readonly row?: LoadedFileRow; readonly previous?: PreviousLoad }> {
    const { rows } = await trx.executeQuery(this.#selectWithPrevious.with<LoadedFileRow>(ledgerKey(slice)));
    const [first, second] = rows;
    const row = first !== undefined && String(first.report_date) === slice.reportDate ? first : undefined;
    const earlier = row === undefined ? first : second;
    return { row, previous: earlier && { reportDate: String(earlier.report_date), rowCount: Number(earlier.row_count) } };
  }

  /** The outcome stands as recorded (the same file, no data again): only `checked_at`, `attempts` and `duration_ms` move. */
  async touch(trx: Kysely<Warehouse>, stamp: LedgerStamp): Promise<void> {
    const { slice } = stamp;
    await trx.executeQuery(
      this.#touch.with({
        portfolio_id: slice.portfolioId,
        report_type: slice.reportType,
        report_date: slice.reportDate,
        checked_at: stamp.now,
        attempts: stamp.attempts,
        duration_ms: stamp.durationMs,
      }),
    );
  }

  /**
   * Records `loaded` with the file's facts, the rows written and the id they were written with
   * (`load_id`, `loaded_at`: now); `first_loaded_at` keeps the first load's time.
   */
  async recordLoaded(trx: Kysely<Warehouse>, stamp: LedgerStamp, load: { readonly file: ExportFileFacts; readonly rowCount: number; readonly loadId: string }): Promise<void> {
    const { file, rowCount, loadId } = load;
    const { now } = stamp;
    await this.#record(trx, stamp, {
      status: 'loaded',
      row_count: rowCount,
      format: file.format,
      file_name: file.fileName,
      bytes: file.bytes,
      content_sha256: file.sha256,
      first_loaded_at: now,
      load_id: loadId,
      loaded_at: now,
    });
  }

  /** Records `no_data` (an empty answer): the slice holds no rows, so no load. */
  async recordNoData(trx: Kysely<Warehouse>, stamp: LedgerStamp, format: ExportFormat): Promise<void> {
    await this.#record(trx, stamp, {
      status: 'no_data',
      row_count: 0,
      format,
      file_name: null,
      bytes: 0,
      content_sha256: null,
      first_loaded_at: null,
      load_id: null,
      loaded_at: null,
    });
  }

  /**
   * Records `failed` with its reason (`CODE: what to check`, the code also kept in `error_code`);
   * the facts of rows loaded earlier stay, as the rows do (their `load_id` and `loaded_at` too).
   */
  async recordFailure(trx: Kysely<Warehouse>, stamp: LedgerStamp, reason: string): Promise<void> {
    const { slice, now, attempts, durationMs } = stamp;
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
        load_id: null,
        loaded_at: null,
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
  }

  /**
   * The latest date before the slice's that the ledger records `loaded` for the same portfolio and
   * report type, with its rows (what `rowCountDrop` compares with): one read along the ledger's key.
   */
  async previousLoad(trx: Kysely<Warehouse>, slice: Slice): Promise<PreviousLoad | undefined> {
    const result = await trx.executeQuery(this.#previousLoad.with<Pick<ReportLoadsRow, 'report_date' | 'row_count'>>(ledgerKey(slice)));
    const row = result.rows[0];
    return row && { reportDate: String(row.report_date), rowCount: Number(row.row_count) };
  }

  /** Replaces the slice's data-quality results (`slice_checks`) with those of the file just checked (`replace: false`: it has none yet). */
  async recordChecks(
    trx: Kysely<Warehouse>,
    stamp: Pick<LedgerStamp, 'slice' | 'now'>,
    results: readonly SliceCheckResult[],
    options: { readonly replace?: boolean } = {},
  ): Promise<void> {
    const { now } = stamp;
    const key = ledgerKey(stamp.slice);
    // `replace: false` when the slice has no ledger row, so no results either: one statement less.
    if (options.replace !== false) await trx.executeQuery(this.#deleteChecks.with(key));
    if (results.length === 0) return;
    const { statement, names } = this.#insertChecksOf(results.length);
    const values: Record<string, unknown> = {};
    let at = 0;
    for (const result of results) {
      // Every column named, no spread: properties added after a spread cost V8 a slow path each,
      // which made these rows dearer than the INSERT that writes them.
      const row: SliceChecksRow = {
        portfolio_id: key.portfolio_id,
        report_type: key.report_type,
        report_date: key.report_date,
        check_name: result.check,
        severity: result.severity,
        outcome: result.outcome,
        measured: result.measured,
        threshold: result.threshold,
        message: result.message,
        checked_at: now,
      };
      for (const column of SLICE_CHECK_COLUMNS) values[names[at++]!] = row[column];
    }
    await trx.executeQuery(statement.with(values));
  }

  /** The INSERT of `count` check results, compiled on first use (its values are named `<column><index>`). */
  #insertChecksOf(count: number): CheckInsert {
    let insert = this.#insertChecks.get(count);
    if (insert === undefined) {
      const names = Array.from({ length: count }, (_, i) => SLICE_CHECK_COLUMNS.map((column) => `${column}${i}`)).flat();
      const statement = ReusableStatement.compile<Record<string, unknown>>(names, (values) =>
        this.#db
          .insertInto('slice_checks')
          .values(Array.from({ length: count }, (_, i) => Object.fromEntries(SLICE_CHECK_COLUMNS.map((column) => [column, values[`${column}${i}`]])) as unknown as SliceChecksRow))
          // Rows left by a ledger row deleted by hand (the slice then looks never attempted) are overwritten, not a conflict.
          .onConflict((oc) =>
            oc.columns(['portfolio_id', 'report_type', 'report_date', 'check_name']).doUpdateSet((eb) => ({
              severity: eb.ref('excluded.severity'),
              outcome: eb.ref('excluded.outcome'),
              measured: eb.ref('excluded.measured'),
              threshold: eb.ref('excluded.threshold'),
              message: eb.ref('excluded.message'),
              checked_at: eb.ref('excluded.checked_at'),
            })),
          ),
      );
      insert = { statement, names };
      this.#insertChecks.set(count, insert);
    }
    return insert;
  }

  /** Upserts the slice's ledger row for a new outcome with rows (or none): no error, checked and changed now. */
  async #record(
    trx: Kysely<Warehouse>,
    stamp: LedgerStamp,
    facts: Pick<ReportLoadsRow, 'status' | 'row_count' | 'format' | 'file_name' | 'bytes' | 'content_sha256' | 'first_loaded_at' | 'load_id' | 'loaded_at'>,
  ): Promise<void> {
    const { slice, now, attempts, durationMs } = stamp;
    // Every column named, no spread: see recordChecks.
    const row: ReportLoadsRow = {
      portfolio_id: slice.portfolioId,
      report_type: slice.reportType,
      report_date: slice.reportDate,
      status: facts.status,
      row_count: facts.row_count,
      format: facts.format,
      file_name: facts.file_name,
      bytes: facts.bytes,
      content_sha256: facts.content_sha256,
      attempts,
      error: null,
      error_code: null,
      first_loaded_at: facts.first_loaded_at,
      updated_at: now,
      checked_at: now,
      duration_ms: durationMs,
      load_id: facts.load_id,
      loaded_at: facts.loaded_at,
    };
    await trx.executeQuery(this.#upsert.with(row));
  }
}

/** Whose ledger row an outcome goes in, and what every outcome stamps on it. */
export interface LedgerStamp {
  readonly slice: Slice;
  /** The warehouse's clock, read under the slice's lock (see `warehouseNow`). */
  readonly now: string;
  /** Attempts it took, this one included. */
  readonly attempts: number;
  /** How long the attempt took, when known. */
  readonly durationMs: number | null;
}

/** A slice as the warehouse's columns name it. */
type SliceKey = Pick<ReportLoadsRow, 'portfolio_id' | 'report_type' | 'report_date'>;

/** The INSERT of a number of check results, and its value names in the order `recordChecks` fills them (row by row, column by column). */
interface CheckInsert {
  readonly statement: ReusableStatement<Record<string, unknown>>;
  readonly names: readonly string[];
}

const SLICE_KEY: readonly (keyof SliceKey)[] = ['portfolio_id', 'report_type', 'report_date'];

function ledgerKey(slice: Slice): SliceKey {
  return { portfolio_id: slice.portfolioId, report_type: slice.reportType, report_date: slice.reportDate };
}
