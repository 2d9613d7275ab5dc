import { sql, type Kysely, type Transaction } from 'kysely';
import { SyncError } from '../errors.js';
import type { ReportDefinition } from '../reports/report-definition.js';
import type { WarehouseRow } from '../reports/row-builder.js';
import type { ExportFormat } from '../reports/report-types.js';
import { describeSlice, type Slice } from '../slice.js';
import { classifyWarehouseError } from './classify-warehouse-error.js';
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
  /** Rows per INSERT. @defaultValue 500 */
  readonly batchRows?: number;
  /** Clock, for tests. */
  readonly now?: () => Date;
}

/**
 * Writes slices and their ledger rows. Each write is one transaction holding the slice's rows
 * and its ledger row together, so a crash leaves a slice either as it was or wholly new.
 */
export class SliceLoader {
  readonly #db: Kysely<Warehouse>;
  readonly #batchRows: number;
  readonly #now: () => Date;

  constructor(options: SliceLoaderOptions) {
    this.#db = options.db;
    this.#batchRows = options.batchRows ?? 500;
    this.#now = options.now ?? (() => new Date());
  }

  /** The slice's ledger row, if it was ever attempted. */
  async ledgerEntry(slice: Slice): Promise<ReportLoadsRow | undefined> {
    try {
      return await this.#db
        .selectFrom('report_loads')
        .selectAll()
        .where('portfolio_id', '=', slice.portfolioId)
        .where('report_type', '=', slice.reportType)
        .where('report_date', '=', slice.reportDate)
        .executeTakeFirst();
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
    return this.#write(`loading ${describeSlice(slice)}`, async (trx) => {
      // The first statement writes, so SQLite takes its write lock here rather than upgrading a read lock later.
      await deleteRows(trx, definition, slice);
      let rowCount = 0;
      let batch: WarehouseRow[] = [];
      for await (const row of rows) {
        batch.push(row);
        if (batch.length >= this.#batchRows) {
          await insertRows(trx, definition, batch);
          rowCount += batch.length;
          batch = [];
        }
      }
      if (batch.length > 0) {
        await insertRows(trx, definition, batch);
        rowCount += batch.length;
      }
      const now = this.#now().toISOString();
      await upsertLedger(trx, {
        ...ledgerKey(slice),
        status: 'loaded',
        row_count: rowCount,
        format: file.format,
        file_name: file.fileName,
        bytes: file.bytes,
        content_sha256: file.sha256,
        attempts,
        error: null,
        first_loaded_at: now,
        updated_at: now,
        checked_at: now,
      });
      return rowCount;
    });
  }

  /** Records `no_data` (an empty body) and removes any rows the slice had. */
  async recordNoData(slice: Slice, definition: ReportDefinition, format: ExportFormat, attempts: number): Promise<void> {
    await this.#write(`recording no data for ${describeSlice(slice)}`, async (trx) => {
      await deleteRows(trx, definition, slice);
      const now = this.#now().toISOString();
      await upsertLedger(trx, {
        ...ledgerKey(slice),
        status: 'no_data',
        row_count: 0,
        format,
        file_name: null,
        bytes: 0,
        content_sha256: null,
        attempts,
        error: null,
        first_loaded_at: null,
        updated_at: now,
        checked_at: now,
      });
    });
  }

  /** Notes that the slice was fetched again and nothing changed: only `checked_at` and `attempts` move. */
  async recordUnchanged(slice: Slice, attempts: number): Promise<void> {
    await this.#write(`updating the ledger for ${describeSlice(slice)}`, async (trx) => {
      await trx
        .updateTable('report_loads')
        .set({ checked_at: this.#now().toISOString(), attempts })
        .where('portfolio_id', '=', slice.portfolioId)
        .where('report_type', '=', slice.reportType)
        .where('report_date', '=', slice.reportDate)
        .execute();
    });
  }

  /** Records `failed` with its reason; rows loaded earlier, and the ledger's facts about them, stay. */
  async recordFailure(slice: Slice, reason: string, attempts: number): Promise<void> {
    await this.#write(`recording the failure of ${describeSlice(slice)}`, async (trx) => {
      const now = this.#now().toISOString();
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
          first_loaded_at: null,
          updated_at: now,
          checked_at: now,
        })
        .onConflict((oc) =>
          oc.columns(['portfolio_id', 'report_type', 'report_date']).doUpdateSet({
            status: 'failed',
            attempts,
            error: reason,
            updated_at: now,
            checked_at: now,
          }),
        )
        .execute();
    });
  }

  async #write<T>(action: string, work: (trx: Transaction<Warehouse>) => Promise<T>): Promise<T> {
    try {
      return await this.#db.transaction().execute(work);
    } catch (error) {
      // A bad record thrown from the row stream is the file's fault, not the database's.
      if (error instanceof SyncError) throw error;
      throw classifyWarehouseError(error, action);
    }
  }
}

function ledgerKey(slice: Slice): Pick<ReportLoadsRow, 'portfolio_id' | 'report_type' | 'report_date'> {
  return { portfolio_id: slice.portfolioId, report_type: slice.reportType, report_date: slice.reportDate };
}

async function deleteRows(trx: Transaction<Warehouse>, definition: ReportDefinition, slice: Slice): Promise<void> {
  // The table is chosen by the definition, so Kysely cannot know its row type here.
  let query = (trx as unknown as Kysely<Record<string, WarehouseRow>>)
    .deleteFrom(definition.table)
    .where('portfolio_id', '=', slice.portfolioId)
    .where('report_date', '=', slice.reportDate);
  if (definition.storesReportType) query = query.where('report_type', '=', slice.reportType);
  await query.execute();
}

async function insertRows(trx: Transaction<Warehouse>, definition: ReportDefinition, rows: WarehouseRow[]): Promise<void> {
  await (trx as unknown as Kysely<Record<string, WarehouseRow>>).insertInto(definition.table).values(rows).execute();
}

async function upsertLedger(trx: Transaction<Warehouse>, row: ReportLoadsRow): Promise<void> {
  await trx
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
        first_loaded_at: sql`coalesce(report_loads.first_loaded_at, excluded.first_loaded_at)`,
        updated_at: eb.ref('excluded.updated_at'),
        checked_at: eb.ref('excluded.checked_at'),
      })),
    )
    .execute();
}
