import { CompiledQuery, sql, type Kysely } from 'kysely';
import { MYSQL_DECIMALS } from '../../reports/decimal-capacity.js';
import type { ReportDefinition } from '../../reports/report-definition.js';
import { tableColumns, type RowValues } from '../../extract/row-builder.js';
import type { RowBatches, RowWriter } from '../engine/row-writer.js';
import type { Warehouse } from '../engine/warehouse-schema.js';
import { CopyTextRows } from '../engine/copy-text-rows.js';
import { copyTextChunks } from '../loading/copy-text-chunks.js';
import { copyTextValues } from '../loading/copy-text-values.js';
import { copyLineEnd } from '../loading/copy-text-row.js';
import { MultiRowInsertWriter } from '../loading/multi-row-insert-writer.js';
import { isSyncIterable } from '../../runtime/sync-iterable.js';
import { LoadDataLocal } from './load-data-local.js';

/**
 * MySQL's {@link RowWriter}: where the connection can load local files (the server's
 * `local_infile` is on, see `sessionMysqlPool`), the rows streamed with `LOAD DATA LOCAL INFILE` in
 * the COPY text Postgres reads (see {@link copyTextChunks}: a tab between fields, `\N` for NULL,
 * backslash escapes), which is also LOAD DATA's own default format, said in full in the statement;
 * otherwise multi-row INSERTs (see {@link MultiRowInsertWriter}), each a server-side prepared
 * statement the connection keeps. Decimals as `DECIMAL(65,30)` keeps them.
 *
 * A load the server stored differently from what was sent (with LOCAL it only warns) fails, and so
 * does one whose row count is not the count sent (see `runLoadDataLocal`).
 */
export class MysqlRowWriter extends MultiRowInsertWriter {
  /** The LOAD DATA statement per table, compiled on first use. */
  readonly #loadSql = new Map<string, string>();

  /** A worker thread that types a big file's rows also writes them as COPY text, for LOAD DATA (or, without it, read back as values). */
  override readonly takesCopyText = true;

  constructor() {
    super(MYSQL_DECIMALS);
  }

  override async write(trx: Kysely<Warehouse>, batch: RowBatches): Promise<number> {
    const { definition, rows, batchRows, loadId } = batch;
    // A small file's rows, all at hand (see `SliceRows`), go in prepared multi-row INSERTs: LOAD
    // DATA's second round trip and its stream cost the process more than it saves on a few rows.
    if (!(rows instanceof CopyTextRows) && isSyncIterable(rows)) return super.write(trx, batch);
    const tally = { rows: 0 };
    const lineEnd = copyLineEnd(loadId);
    const load = new LoadDataLocal(copyTextChunks(rows, { batchRows, lineEnd, tally }));
    const result = await trx.executeQuery(CompiledQuery.raw(this.#loadSqlFor(trx, definition), [load]));
    // The connection cannot load local files: nothing was sent, and the rows are still unread.
    if (load.unavailable !== undefined) return super.write(trx, { ...batch, rows: rows instanceof CopyTextRows ? valuesOf(rows, lineEnd) : rows });
    const stored = Number(result.numAffectedRows ?? -1);
    if (stored !== tally.rows) {
      throw new Error(`LOAD DATA LOCAL INFILE into ${definition.table} stored ${stored} rows of the ${tally.rows} sent, so the rows were not kept`);
    }
    return tally.rows;
  }

  /** How the rows of the warehouse `db` are written, for the log at start. */
  override async describe(db: Kysely<Warehouse>): Promise<string> {
    const probe = LoadDataLocal.probe();
    await db.executeQuery(CompiledQuery.raw('do 0', [probe]));
    return probe.unavailable === undefined ? 'LOAD DATA LOCAL INFILE' : `multi-row INSERTs: ${probe.unavailable}`;
  }

  #loadSqlFor(trx: Kysely<Warehouse>, definition: ReportDefinition): string {
    let text = this.#loadSql.get(definition.table);
    if (text === undefined) {
      const columns = tableColumns(definition).map((column) => sql.ref(column));
      // The separators as hex literals: their meaning does not depend on the sql_mode (NO_BACKSLASH_ESCAPES).
      text = sql`load data local infile 'slice-rows' into table ${sql.table(definition.table)} character set utf8mb4
        fields terminated by x'09' escaped by x'5c' lines terminated by x'0a' (${sql.join(columns)})`.compile(trx).sql;
      this.#loadSql.set(definition.table, text);
    }
    return text;
  }
}

/** Rows a worker thread wrote as COPY text, as values again, for the INSERTs of a connection without local files. */
async function* valuesOf(rows: CopyTextRows, lineEnd: string): AsyncGenerator<RowValues> {
  for await (const batch of rows.batches(lineEnd)) yield* copyTextValues(batch.text, lineEnd);
}
