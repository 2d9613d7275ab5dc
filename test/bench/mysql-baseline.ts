import mysql from 'mysql2/promise';

/**
 * How the MySQL baselines connect (mysql2, as a hand-written script would): the database URL,
 * every character of the service's text (MySQL's `utf8` is three bytes at most), dates read back
 * as the `YYYY-MM-DD` they are. No stack trace captured at each call (`trace`): mysql2's promise
 * API does that by default, for every statement, which its callback API (the product's, through
 * Kysely) never does; a floor should not carry a cost the product does not.
 */
export function mysqlBaselineConnection(databaseUrl: string): mysql.ConnectionOptions {
  return { uri: databaseUrl, charset: 'utf8mb4', dateStrings: true, trace: false };
}

/**
 * A pool of `connections` for baselines that load slices side by side, each session READ
 * COMMITTED: under REPEATABLE READ (the server's default) the delete of a slice not yet loaded
 * locks the gap its rows go into, and two slices' transactions sharing a gap deadlock on their
 * inserts. The product's sessions are READ COMMITTED too.
 */
export function openMysqlBaselinePool(databaseUrl: string, connections: number): mysql.Pool {
  const pool = mysql.createPool({ ...mysqlBaselineConnection(databaseUrl), connectionLimit: connections });
  // Queued on the new connection before anything the pool hands it out for; a connection whose
  // session could not be set is closed, so its first statement fails rather than runs unlike the rest.
  pool.pool.on('connection', (connection) => {
    connection.query('set session transaction isolation level read committed', (error) => {
      if (error) connection.destroy();
    });
  });
  return pool;
}

/** Runs `work` in one transaction on a connection of `pool`: committed when it resolves, rolled back when it throws. */
export async function inMysqlTransaction<T>(pool: mysql.Pool, work: (connection: mysql.PoolConnection) => Promise<T>): Promise<T> {
  const connection = await pool.getConnection();
  try {
    await connection.query('start transaction');
    try {
      const result = await work(connection);
      await connection.query('commit');
      return result;
    } catch (error) {
      await connection.query('rollback');
      throw error;
    }
  } finally {
    connection.release();
  }
}

/** A value the baselines bind: text (decimals and dates too), a number or NULL. */
export type MysqlValue = string | number | null;

/** Rows per INSERT of the MySQL baselines: the product's default `warehouse.batchRows`. */
export const MYSQL_ROWS_PER_INSERT = 500;

/** Statements made by {@link multiRowInsert}, by table, columns and rows: a script builds each text once. */
const inserts = new Map<string, string>();

/** A multi-row INSERT of `rows` rows into `columns` of `table`, every value a parameter. */
export function multiRowInsert(table: string, columns: readonly string[], rows: number): string {
  const key = `${table}(${columns.join(',')})×${rows}`;
  let statement = inserts.get(key);
  if (statement === undefined) {
    const row = `(${columns.map(() => '?').join(', ')})`;
    statement = `insert into ${table} (${columns.join(', ')}) values ${Array.from({ length: rows }, () => row).join(', ')}`;
    inserts.set(key, statement);
  }
  return statement;
}

/**
 * Inserts `values` (rows of `columns.length` values each, end to end) into `table` on `connection`,
 * {@link MYSQL_ROWS_PER_INSERT} rows per prepared statement (mysql2's `execute`).
 */
export async function insertMysqlRows(
  connection: mysql.PoolConnection | mysql.Connection,
  table: string,
  columns: readonly string[],
  values: readonly MysqlValue[],
): Promise<void> {
  const perInsert = MYSQL_ROWS_PER_INSERT * columns.length;
  for (let start = 0; start < values.length; start += perInsert) {
    const part = start === 0 && values.length <= perInsert ? values : values.slice(start, start + perInsert);
    await connection.execute(multiRowInsert(table, columns, part.length / columns.length), part as MysqlValue[]);
  }
}
