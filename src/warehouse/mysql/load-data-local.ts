/**
 * The file of a `LOAD DATA LOCAL INFILE`, passed as the one parameter of that statement through
 * Kysely's `executeQuery`, so the load runs on the transaction's own connection. Only a MySQL
 * warehouse opened by `openWarehouse` (see `sessionMysqlPool`) understands it. The chunks are
 * COPY text rows (see `copyTextChunks`): data, never SQL.
 *
 * A connection that cannot load local files (the server's `local_infile` is off, or the client
 * does not offer them) does not run the statement: it sets {@link unavailable} and answers with
 * no rows, leaving the chunks unread, so the writer can send the same rows another way.
 */
export class LoadDataLocal {
  /** The rows in COPY text, a batch of whole lines per chunk; none for {@link LoadDataLocal.probe}. */
  readonly chunks: AsyncIterable<string> | undefined;
  /** Set by the connection when it cannot load local files: why, in words for the log. */
  unavailable: string | undefined;

  constructor(chunks: AsyncIterable<string> | undefined) {
    this.chunks = chunks;
  }

  /** Asks a connection only whether it can load local files: it answers through {@link unavailable} and runs nothing. */
  static probe(): LoadDataLocal {
    return new LoadDataLocal(undefined);
  }
}
