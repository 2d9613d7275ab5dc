import type { Kysely } from 'kysely';
import type { DecimalCapacity } from '../../reports/decimal-capacity.js';
import type { ReportDefinition } from '../../reports/report-definition.js';
import type { RowValues } from '../../extract/row-builder.js';
import type { CopyTextRows } from './copy-text-rows.js';
import type { Warehouse } from './warehouse-schema.js';

/**
 * Writes a slice's rows into its report table the fastest way the warehouse's dialect has: each
 * engine has one (`WarehouseEngine.rowWriter`). Every value stays a parameter or COPY (LOAD DATA) data, never SQL text.
 */
export interface RowWriter {
  /**
   * Whether {@link write} also takes rows already written as COPY text ({@link CopyTextRows}), so a
   * thread that types rows can format them too (Postgres, MySQL).
   */
  readonly takesCopyText: boolean;

  /** What the dialect's decimal columns keep exactly: the row builder refuses a value they would round. */
  readonly decimals: DecimalCapacity;

  /**
   * Writes the rows (each in the order of `rowColumns(definition)`, read once and not kept; or, where
   * {@link takesCopyText}, the lines of a {@link CopyTextRows}) inside the caller's transaction,
   * `batchRows` at a time, each with `loadId` as its `load_id` (see `tableColumns`). A row that
   * throws (a bad record) ends the write with that error; the caller's rollback then leaves the
   * table as it was.
   * @returns the number of rows written
   */
  write(trx: Kysely<Warehouse>, batch: RowBatches): Promise<number>;

  /**
   * How the rows of the warehouse `db` are written (`COPY FROM STDIN`; MySQL: `LOAD DATA LOCAL
   * INFILE`, or multi-row INSERTs and why), said once at start so an operator knows which path runs.
   */
  describe(db: Kysely<Warehouse>): Promise<string>;
}

/** What {@link RowWriter.write} writes, and how. */
export interface RowBatches {
  readonly definition: ReportDefinition;
  readonly rows: SliceRows;
  /** Rows per INSERT, or per chunk of COPY data. */
  readonly batchRows: number;
  /** The `load_id` of every row. */
  readonly loadId: string;
}

/**
 * A slice's rows as a row writer takes them: typed values (at once, or as they come), or (see
 * {@link RowWriter.takesCopyText}) COPY text.
 */
export type SliceRows = Iterable<RowValues> | AsyncIterable<RowValues> | CopyTextRows;
