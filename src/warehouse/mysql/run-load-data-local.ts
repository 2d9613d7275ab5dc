import type { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { MysqlQueryResult } from 'kysely';
import type mysql from 'mysql2';
import type { LoadDataLocal } from './load-data-local.js';

/** What a connection reports of the first warnings of a load that had any. */
const FIRST_WARNINGS = 'show warnings limit 3';

/**
 * Runs `sql`, a `LOAD DATA LOCAL INFILE`, on `connection`, streaming `load`'s chunks as the file
 * the server asks for (whatever name it asks by: no file of this machine is ever read).
 *
 * With LOCAL, MySQL and MariaDB cannot stop the client's file half-way, so they treat every row
 * as IGNORE would, even in strict mode: a value a column cannot keep (a decimal that is no number,
 * text too long, NULL in a NOT NULL column), a duplicate key or a line with too few fields is
 * stored as something else, or skipped, with only a warning. A load that ends with any warning is
 * therefore answered with an error naming the first ones, and the caller's transaction rolls back.
 * A failure of the chunks (a bad record) ends the file early and is the error answered.
 */
export function runLoadDataLocal(connection: mysql.PoolConnection, sql: string, load: LoadDataLocal, callback: (error: unknown, result: MysqlQueryResult) => void): void {
  // mysql2 pauses the file while the socket is full and resumes it on 'drain': rows are read no
  // faster than the server takes them.
  const file = Readable.from(asBytes(load.chunks ?? []), { objectMode: false });
  // The connection's socket: mysql2's typings leave it out.
  const socket = (connection as unknown as { readonly stream?: EventEmitter }).stream;
  const forgetLoadListeners = socket && listenersAddedFrom(socket);
  connection.query({ sql, infileStreamFactory: () => file }, (error: unknown, result: unknown) => {
    // A load the server ended early leaves the chunks unread: stop them (a worker thread may be producing them).
    file.destroy();
    forgetLoadListeners?.();
    if (error) return callback(error, undefined as never);
    const header = result as mysql.ResultSetHeader;
    if (header.warningStatus === 0) return callback(null, header as unknown as MysqlQueryResult);
    connection.query(FIRST_WARNINGS, (trouble: unknown, warnings: unknown) => {
      callback(trouble ?? refusedLoad(header, warnings as readonly ServerWarning[]), undefined as never);
    });
  });
}

/** The socket events mysql2 listens to while it sends a file, to pause and resume it. */
const FILE_EVENTS = ['pause', 'drain'] as const;

/**
 * Notes the socket's {@link FILE_EVENTS} listeners before a load; the function returned removes
 * those the load added. mysql2 removes them itself only when the load succeeds: after a file that
 * failed (a bad record) or a load the server refused, they stayed on the pooled connection's
 * socket, two more each time, holding the old file, until Node warned of a leak.
 */
function listenersAddedFrom(socket: EventEmitter): () => void {
  const before = new Map(FILE_EVENTS.map((event) => [event, new Set(socket.listeners(event))]));
  return () => {
    for (const event of FILE_EVENTS) {
      for (const listener of socket.listeners(event)) {
        if (!before.get(event)!.has(listener)) socket.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
  };
}

/** A row of SHOW WARNINGS. */
interface ServerWarning {
  readonly Level: string;
  readonly Code: number;
  readonly Message: string;
}

/** The chunks as the bytes mysql2 sends (it takes only buffers). */
async function* asBytes(chunks: AsyncIterable<string> | Iterable<string>): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) yield Buffer.from(chunk, 'utf8');
}

/** The error of a load that ended with warnings: the server did not store some value as it was sent. */
function refusedLoad(header: mysql.ResultSetHeader, warnings: readonly ServerWarning[]): Error {
  const first = warnings.map((warning) => `${warning.Message} (${warning.Level} ${warning.Code})`).join('; ');
  const error = new Error(
    `LOAD DATA LOCAL INFILE ended with ${header.warningStatus} warning${header.warningStatus === 1 ? '' : 's'} (${header.info.trim()}): ${first}. ` +
      'With LOCAL the server stores a value it cannot keep as another one, with only a warning, so the rows were not kept: check these values in the file',
  );
  return Object.assign(error, { errno: warnings[0]?.Code });
}
