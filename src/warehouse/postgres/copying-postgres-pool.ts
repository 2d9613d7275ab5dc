import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { CopyFromStdin } from './copy-from-stdin.js';

/**
 * The pg pool as Kysely's Postgres dialect sees it, with one addition: a statement whose only
 * parameter is a {@link CopyFromStdin} runs as `COPY … FROM STDIN` on the same connection,
 * streaming that parameter's chunks. Kysely has no COPY of its own; this way the copy joins the
 * Kysely transaction it is issued in (one connection, one commit or rollback), while every
 * other statement passes to pg unchanged.
 */
export function copyingPostgresPool(pool: pg.Pool): PostgresPool {
  // Kysely keys its connection objects by client, so each pg client keeps one wrapper.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = copyingClient(client);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

function copyingClient(client: pg.PoolClient): PostgresPoolClient {
  return {
    query(sqlOrCursor: unknown, parameters?: ReadonlyArray<unknown>) {
      const copy = parameters?.length === 1 && parameters[0] instanceof CopyFromStdin ? parameters[0] : undefined;
      if (copy && typeof sqlOrCursor === 'string') return runCopy(client, sqlOrCursor, copy);
      return (client.query as (...args: unknown[]) => unknown)(sqlOrCursor, parameters);
    },
    release: () => client.release(),
  } as PostgresPoolClient;
}

async function runCopy<R>(client: pg.PoolClient, statement: string, copy: CopyFromStdin): Promise<PostgresQueryResult<R>> {
  const stream = client.query(copyFrom(statement));
  // If the chunks throw (a bad record in the file), pipeline destroys the COPY stream, which sends
  // CopyFail: the server drops the copied rows, the connection stays usable for the rollback,
  // and pipeline rejects with the chunks' own error rather than the server's echo of it.
  await pipeline(Readable.from(copy.chunks, { objectMode: false }), stream);
  // Kysely reads numAffectedRows only for INSERT/UPDATE/DELETE/MERGE; the count is on `rowCount`.
  return { command: 'COPY' as PostgresQueryResult<R>['command'], rowCount: stream.rowCount, rows: [] };
}
