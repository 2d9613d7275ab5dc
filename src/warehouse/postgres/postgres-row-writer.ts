import { CompiledQuery, sql, type Kysely } from 'kysely';
import { POSTGRES_DECIMALS } from '../../reports/decimal-capacity.js';
import { tableColumns } from '../../extract/row-builder.js';
import { CopyFromStdin } from './copy-from-stdin.js';
import { copyTextChunks } from '../loading/copy-text-chunks.js';
import { copyLineEnd } from '../loading/copy-text-row.js';
import type { RowBatches, RowWriter } from '../engine/row-writer.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * Postgres's {@link RowWriter}: the rows streamed with `COPY … FROM STDIN` in text format, in
 * chunks of `batchRows` rows (see {@link copyTextChunks}), on the transaction's connection. Needs a warehouse opened by `openWarehouse`, whose pool knows how to send the data
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
    const tally = { rows: 0 };
    // A row that fails to build (a bad record) aborts the COPY with that error, and the transaction rolls back.
    const statement = sql`copy ${sql.table(definition.table)} (${sql.join(columns.map((column) => sql.ref(column)))}) from stdin`.compile(trx);
    await trx.executeQuery(CompiledQuery.raw(statement.sql, [new CopyFromStdin(copyTextChunks(rows, { batchRows, lineEnd, tally }))]));
    return tally.rows;
  }

  async describe(): Promise<string> {
    return 'COPY FROM STDIN';
  }
}
