import { WarehouseError } from '../../errors/sync-error.js';

/**
 * The data of a `COPY … FROM STDIN`, passed as the one parameter of that statement through
 * Kysely's `executeQuery`, so the copy runs on the transaction's own connection. Only a
 * Postgres warehouse opened by `openWarehouse` (see {@link copyingPostgresPool}) understands it.
 * The chunks are COPY text-format rows (see {@link copyTextRow}): data, never SQL.
 */
export class CopyFromStdin {
  /** Rows in COPY text format, a batch of whole rows per chunk. */
  readonly chunks: AsyncIterable<string | Buffer>;

  constructor(chunks: AsyncIterable<string | Buffer>) {
    this.chunks = chunks;
  }

  /** Called by pg if this reaches a connection that does not know COPY: fail clearly, not with a mangled value. */
  toPostgres(): never {
    throw new WarehouseError('WAREHOUSE_REJECTED', 'COPY FROM STDIN reached a Postgres connection that cannot stream it: open the warehouse with openWarehouse()');
  }
}
