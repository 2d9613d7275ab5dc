import type { MysqlPool, MysqlPoolConnection, MysqlQueryResult } from 'kysely';
import type mysql from 'mysql2';
import { ConfigError } from '../../errors/sync-error.js';
import { LoadDataLocal } from './load-data-local.js';
import { runLoadDataLocal } from './run-load-data-local.js';

/** The most an in-memory temporary table of a session may take before the server moves it to disk. */
export const TEMPORARY_TABLE_BYTES = 192 * 1024 * 1024;

/** What each new connection's session is set to before Kysely may use it (see {@link sessionMysqlPool}). */
const SESSION_SETUP = [
  // A slice's ledger row is read under its lock, and must be the latest committed, not a snapshot
  // taken at the transaction's first read (REPEATABLE READ, the default) before the lock was held.
  'set session transaction isolation level read committed',
  // The session's clock and dates never depend on the server's zone.
  "set session time_zone = '+00:00'",
  // `||` concatenates, as in SQLite and Postgres (the ledger writes `report_type || ''` to keep a
  // planner off an index); MySQL's default reads it as a logical OR.
  "set session sql_mode = concat_ws(',', @@session.sql_mode, 'PIPES_AS_CONCAT')",
  // Counting the ledger by pair and week groups in a temporary table of up to the dashboard's
  // MAX_CELLS rows. MariaDB's in-memory temporary tables hold each VARCHAR at its full width (a
  // `report_type` is 1,020 bytes in utf8mb4), so the default 16 MiB cap sends such a count to
  // disk, where it takes many times longer. The cap is the most a table may take, not what it takes.
  `set session max_heap_table_size = ${TEMPORARY_TABLE_BYTES}, tmp_table_size = ${TEMPORARY_TABLE_BYTES}`,
];

/** The statement after which a connection's slice locks (see `MysqlSliceLock`) are released. */
const RELEASE_SLICE_LOCKS = 'do release_all_locks()';

/** What the connection of a pool is told: that it took a slice lock, so the next COMMIT or ROLLBACK also releases it. */
export const HOLDS_SLICE_LOCKS = Symbol('holds slice locks');

/** How {@link sessionMysqlPool} sets up its connections. */
export interface SessionMysqlPoolOptions {
  /** Where the warehouse is, with no password, for messages. */
  readonly location: string;
  /** The pool's connections offer the server local files (mysql2's LOCAL_FILES flag). */
  readonly localFiles: boolean;
}

/**
 * The mysql2 pool as Kysely's MySQL dialect sees it, with five additions:
 *
 * - A new connection is first checked and set up: its `sql_mode` must be strict (else the server
 *   would store a value it cannot keep as the nearest one it can, with a warning nobody reads), and
 *   the session is put in READ COMMITTED and UTC, with `||` concatenating. A server that is not
 *   strict is refused with a `CONFIG_INVALID` {@link ConfigError} naming `sql_mode`.
 * - A statement with parameters runs as a server-side prepared statement (mysql2's `execute`,
 *   which keeps each connection's statements prepared by SQL text): values travel apart from the SQL.
 * - `GET_LOCK` locks are the session's, not the transaction's: once a connection has taken a
 *   slice's lock (its query's parameters start with {@link HOLDS_SLICE_LOCKS}), the COMMIT or
 *   ROLLBACK that ends its transaction is followed by releasing every lock it holds, before the
 *   connection goes back to the pool. A process killed meanwhile loses its session, and its locks with it.
 * - Decimals read back without the zeros their scale pads them with (see `withDecimalsAsWritten`).
 * - A statement whose only parameter is a {@link LoadDataLocal} runs as `LOAD DATA LOCAL INFILE`
 *   streaming its rows (see `runLoadDataLocal`), when both sides allow local files: the client
 *   (`localFiles`) and the server (`local_infile`, read when the connection is set up). Otherwise
 *   the statement is not sent, and the parameter says why.
 */
export function sessionMysqlPool(pool: mysql.Pool, options: SessionMysqlPoolOptions): MysqlPool {
  const { location } = options;
  const ready = new WeakSet<mysql.PoolConnection>();
  /** Why a connection cannot load local files; absent when it can. */
  const noLocalFiles = new WeakMap<mysql.PoolConnection, string>();
  const wrappers = new WeakMap<mysql.PoolConnection, MysqlPoolConnection>();
  return {
    getConnection(callback) {
      pool.getConnection((error, connection) => {
        if (error) return callback(error, undefined as unknown as MysqlPoolConnection);
        let wrapper = wrappers.get(connection);
        if (!wrapper) {
          wrapper = sessionConnection(connection, () => noLocalFiles.get(connection));
          wrappers.set(connection, wrapper);
        }
        if (ready.has(connection)) return callback(null, wrapper);
        const wrapped = wrapper;
        setUpSession(connection, location).then(
          (serverLocalFiles) => {
            const unavailable = !options.localFiles
              ? 'the client was opened without local files'
              : !serverLocalFiles
                ? "the server's local_infile is OFF (SET GLOBAL local_infile = ON, or local_infile = ON under [mysqld], lets report-sync load with LOAD DATA LOCAL INFILE)"
                : undefined;
            if (unavailable !== undefined) noLocalFiles.set(connection, unavailable);
            ready.add(connection);
            callback(null, wrapped);
          },
          (trouble: unknown) => {
            // Never handed out again: the next connection is checked afresh.
            connection.destroy();
            callback(trouble, undefined as unknown as MysqlPoolConnection);
          },
        );
      });
    },
    end: (callback) => pool.end(callback),
  };
}

/** Checks and sets up a new connection's session; resolves to whether the server takes local files (`local_infile`). */
async function setUpSession(connection: mysql.PoolConnection, location: string): Promise<boolean> {
  const [rows] = await connection.promise().query<mysql.RowDataPacket[]>('select @@session.sql_mode as sql_mode, @@global.local_infile as local_infile');
  const refusal = strictModeRefusal(String(rows[0]?.sql_mode ?? ''), location);
  if (refusal) throw refusal;
  for (const statement of SESSION_SETUP) await connection.promise().query(statement);
  return Number(rows[0]?.local_infile) === 1;
}

/**
 * Why a session of `sqlMode` cannot hold the warehouse, or undefined when it can: without
 * STRICT_TRANS_TABLES (or STRICT_ALL_TABLES) MySQL and MariaDB store a value a column cannot keep
 * (a decimal too large, a date that is no date, text too long) as something else, with only a warning.
 */
export function strictModeRefusal(sqlMode: string, location: string): ConfigError | undefined {
  const modes = sqlMode.toUpperCase().split(',');
  if (modes.includes('STRICT_TRANS_TABLES') || modes.includes('STRICT_ALL_TABLES')) return undefined;
  return new ConfigError(
    `the warehouse at ${location} runs with sql_mode '${sqlMode}', which is not strict: it would store a value a column cannot keep as another one, with only a warning. ` +
      "Add STRICT_TRANS_TABLES to the server's sql_mode (sql_mode in the [mysqld] section of its configuration, or SET GLOBAL sql_mode), then start report-sync again",
  );
}

function sessionConnection(connection: mysql.PoolConnection, noLocalFiles: () => string | undefined): MysqlPoolConnection {
  let holdsLocks = false;
  const run = (sql: string, parameters: readonly unknown[], callback: (error: unknown, result: MysqlQueryResult) => void) => {
    const done = (error: unknown, result: unknown, fields?: readonly mysql.FieldPacket[]) => {
      if (Array.isArray(result) && fields) withDecimalsAsWritten(result as Record<string, unknown>[], fields);
      callback(error, result as MysqlQueryResult);
    };
    if (parameters.length === 0) return connection.query(sql, done);
    return connection.execute(sql, parameters.map((value) => value ?? null) as never, done);
  };
  return {
    query(sql: string, parameters: unknown[], callback?: (error: unknown, result: MysqlQueryResult) => void) {
      // Kysely streams only what it is asked to stream (nothing in report-sync): the plain query's stream.
      if (callback === undefined) return connection.query(sql, parameters) as unknown as ReturnType<MysqlPoolConnection['query']>;
      let values = parameters;
      if (values[0] === HOLDS_SLICE_LOCKS) {
        holdsLocks = true;
        values = values.slice(1);
      }
      if (holdsLocks && (sql === 'commit' || sql === 'rollback')) {
        run(sql, values, (error, result) => {
          holdsLocks = false;
          // The transaction's outcome is what the caller hears; a lost connection loses its locks anyway.
          connection.query(RELEASE_SLICE_LOCKS, () => callback(error, result));
        });
        return undefined as never;
      }
      if (values.length === 1 && values[0] instanceof LoadDataLocal) {
        const load = values[0];
        load.unavailable = noLocalFiles();
        if (load.unavailable !== undefined || load.chunks === undefined) callback(null, { affectedRows: 0, insertId: 0 } as MysqlQueryResult);
        else runLoadDataLocal(connection, sql, load, callback);
        return undefined as never;
      }
      run(sql, values, callback);
      return undefined as never;
    },
    release: () => connection.release(),
  } as MysqlPoolConnection;
}

/** mysql2's code of a `DECIMAL` column (`Types.NEWDECIMAL`). */
const NEWDECIMAL = 246;

/**
 * `DECIMAL(65,30)` hands back every digit of its scale: `1.5` comes back `1.500000000000000000000000000000`.
 * The trailing zeros of each decimal's fraction are dropped in place, so a decimal reads back as it
 * was written (the same value either way; Postgres keeps the text, SQLite the double). Done here on
 * the decimal columns alone rather than in mysql2's `typeCast`, which would be called for every
 * field of every row and makes reading a large answer several times slower and larger.
 */
function withDecimalsAsWritten(rows: Record<string, unknown>[], fields: readonly mysql.FieldPacket[]): void {
  const decimals = fields.filter((field) => (field.columnType ?? field.type) === NEWDECIMAL).map((field) => field.name);
  if (decimals.length === 0) return;
  for (const row of rows) {
    for (const name of decimals) {
      const value = row[name];
      if (typeof value === 'string') row[name] = withoutTrailingZeros(value);
    }
  }
}

/** `1.500` → `1.5`, `2.000` → `2`, `10` → `10`. */
function withoutTrailingZeros(text: string): string {
  if (!text.includes('.')) return text;
  const trimmed = text.replace(/\.?0+$/, '');
  return trimmed === '' || trimmed === '-' ? '0' : trimmed === '-0' ? '0' : trimmed;
}
