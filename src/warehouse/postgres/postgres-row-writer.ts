import { CompiledQuery, sql, type Kysely } from 'kysely';
import { POSTGRES_DECIMALS } from '../../reports/decimal-capacity.js';
import { tableColumns } from '../../extract/row-builder.js';
import { CopyFromStdin } from './copy-from-stdin.js';
import { copyLineEnd, copyTextRow } from '../loading/copy-text-row.js';
import { CopyTextRows } from '../engine/copy-text-rows.js';
import { MAX_BATCH_CHARS } from '../loading/max-batch-chars.js';
import type { RowBatches, RowWriter } from '../engine/row-writer.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * Postgres's {@link RowWriter}: the rows streamed with `COPY … FROM STDIN` in text format (see
 * {@link copyTextRow} for the escaping), in chunks of `batchRows` rows (fewer when they are long,
 * see {@link MAX_BATCH_CHARS}), on the transaction's
 * connection. Needs a warehouse opened by `openWarehouse`, whose pool knows how to send the data
 * (see `copyingPostgresPool`).
 */
export class PostgresRowWriter implements RowWriter {
  readonly takesCopyText = true;
  readonly decimals = POSTGRES_DECIMALS;

  async write(trx: Kysely<Warehouse>, batch: RowBatches): Promise<number> {
    const { definition, rows, batchRows, loadId } = batch;
    const columns = tableColumns(definition);
    // load_id, the last column, is the same on every row: written once, as the text after each row's values.
    const lineEnd = copyLineEnd(loadId);
    let rowCount = 0;
    async function* chunks(): AsyncGenerator<string> {
      if (rows instanceof CopyTextRows) {
        for await (const batch of rows.batches(lineEnd)) {
          rowCount += batch.rows;
          yield batch.text;
        }
        return;
      }
      let chunk = '';
      let inChunk = 0;
      for await (const row of rows) {
        chunk += copyTextRow(row, lineEnd);
        rowCount += 1;
        inChunk += 1;
        if (inChunk === batchRows || chunk.length >= MAX_BATCH_CHARS) {
          yield chunk;
          chunk = '';
          inChunk = 0;
        }
      }
      if (chunk !== '') yield chunk;
    }
    // A row that fails to build (a bad record) aborts the COPY with that error, and the transaction rolls back.
    const statement = sql`copy ${sql.table(definition.table)} (${sql.join(columns.map((column) => sql.ref(column)))}) from stdin`.compile(trx);
    await trx.executeQuery(CompiledQuery.raw(statement.sql, [new CopyFromStdin(chunks())]));
    return rowCount;
  }
}
