import { CompiledQuery, type Kysely } from 'kysely';
import type { DecimalCapacity } from '../../reports/decimal-capacity.js';
import type { ReportDefinition } from '../../reports/report-definition.js';
import { tableColumns, type RowValues, type WarehouseRow } from '../../extract/row-builder.js';
import { isSyncIterable } from '../../runtime/sync-iterable.js';
import { CopyTextRows } from '../engine/copy-text-rows.js';
import { MAX_BATCH_CHARS } from './max-batch-chars.js';
import type { RowBatches, RowWriter } from '../engine/row-writer.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * A {@link RowWriter} of multi-row INSERTs of `batchRows` rows (fewer when they are long, see
 * {@link MAX_BATCH_CHARS}), each SQL text compiled by Kysely once and executed again with every
 * batch's values (the warehouse keeps it prepared): SQLite's and MySQL's way.
 */
export class MultiRowInsertWriter implements RowWriter {
  readonly takesCopyText: boolean = false;
  readonly decimals: DecimalCapacity;

  /** @param decimals what the dialect's decimal columns keep exactly */
  constructor(decimals: DecimalCapacity) {
    this.decimals = decimals;
  }

  /**
   * The SQL of an INSERT per table and row count, compiled on first use. At most `batchRows` texts
   * per table: full batches, and the last, shorter batch of each slice (usually of a few sizes).
   */
  readonly #insertSql = new Map<string, string>();

  async write(trx: Kysely<Warehouse>, batch: RowBatches): Promise<number> {
    const { definition, rows, batchRows, loadId } = batch;
    if (rows instanceof CopyTextRows) throw new Error('MultiRowInsertWriter was handed COPY text rows, which it binds no values of: a bug in whoever chose the rows');
    const columns = tableColumns(definition);
    // Each row's values are the table's columns but the last, load_id, which is the load's.
    const valuesPerRow = columns.length - 1;
    const fullBatchSql = this.#insertSqlFor(trx, definition, columns, batchRows);
    let rowCount = 0;
    let inBatch = 0;
    let chars = 0;
    let parameters: (string | number | null)[] = [];
    /** Adds a row to the batch; true when the batch is full. */
    const add = (row: RowValues): boolean => {
      for (let i = 0; i < valuesPerRow; i += 1) {
        const value = row[i] ?? null;
        parameters.push(value);
        if (typeof value === 'string') chars += value.length;
      }
      parameters.push(loadId);
      inBatch += 1;
      // Long rows end a batch early (see MAX_BATCH_CHARS), with an INSERT of their count.
      return inBatch === batchRows || chars >= MAX_BATCH_CHARS;
    };
    const flush = async (): Promise<void> => {
      await trx.executeQuery(CompiledQuery.raw(inBatch === batchRows ? fullBatchSql : this.#insertSqlFor(trx, definition, columns, inBatch), parameters));
      rowCount += inBatch;
      inBatch = 0;
      chars = 0;
      parameters = [];
    };
    // Rows at hand are read in a plain loop: no promise per row.
    if (isSyncIterable(rows)) {
      for (const row of rows) if (add(row)) await flush();
    } else {
      for await (const row of rows) if (add(row)) await flush();
    }
    if (inBatch > 0) await flush();
    return rowCount;
  }

  async describe(_db: Kysely<Warehouse>): Promise<string> {
    return 'multi-row INSERTs';
  }

  #insertSqlFor(trx: Kysely<Warehouse>, definition: ReportDefinition, columns: readonly string[], count: number): string {
    const key = `${definition.table} ${count}`;
    let text = this.#insertSql.get(key);
    if (text === undefined) {
      text = compileInsert(trx, definition, columns, count);
      this.#insertSql.set(key, text);
    }
    return text;
  }
}

/** The SQL of an INSERT of `count` rows; Kysely makes every value a parameter. */
function compileInsert(trx: Kysely<Warehouse>, definition: ReportDefinition, columns: readonly string[], count: number): string {
  const placeholder: WarehouseRow = Object.fromEntries(columns.map((column) => [column, null]));
  // The table is chosen by the definition, so Kysely cannot know its row type here.
  return (trx as unknown as Kysely<Record<string, WarehouseRow>>).insertInto(definition.table).values(new Array<WarehouseRow>(count).fill(placeholder)).compile().sql;
}
