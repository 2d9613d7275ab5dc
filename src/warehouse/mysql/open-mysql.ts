import { Kysely, MysqlDialect } from 'kysely';
import mysql from 'mysql2';
import { ConfigError } from '../../errors/sync-error.js';
import { describeUrl } from '../../redaction/redact.js';
import type { Warehouse } from '../engine/warehouse-schema.js';
import type { OpenedWarehouse, OpenWarehouseOptions } from '../engine/warehouse-engine.js';
import { MysqlSliceLock } from './mysql-slice-lock.js';
import { OnConflictAsDuplicateKeyPlugin } from './on-conflict-as-duplicate-key-plugin.js';
import { sessionMysqlPool } from './session-mysql-pool.js';
import { mysqlTlsOptions } from './mysql-tls.js';

/**
 * Opens the MySQL or MariaDB warehouse of a `mysql://user[:password]@host[:port]/database` URL
 * (`mariadb://` the same; TLS with `?ssl-mode=…&ssl-ca=…`, see `mysqlTlsOptions`), as a pool of
 * connections each checked for strict mode (see `sessionMysqlPool`).
 */
export function openMysql(databaseUrl: string, options: OpenWarehouseOptions): OpenedWarehouse {
  const location = describeUrl(databaseUrl);
  if (location === undefined) throw new ConfigError('DATABASE_URL is not a valid mysql:// URL');
  const url = new URL(databaseUrl);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database === '') throw new ConfigError(`DATABASE_URL (${location}) names no database: add its name, e.g. mysql://user@host:3306/warehouse`);
  const localFiles = options.mysqlLocalFiles ?? true;
  const ssl = mysqlTlsOptions(url, location);
  const pool = mysql.createPool({
    host: url.hostname,
    port: url.port === '' ? 3306 : Number(url.port),
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    database,
    ...(ssl === undefined ? {} : { ssl }),
    connectionLimit: options.poolSize ?? 10,
    connectTimeout: options.connectTimeoutMs === 0 ? undefined : (options.connectTimeoutMs ?? 10_000),
    // Every character of the service's text (emoji included): MySQL's `utf8` is three bytes at most.
    charset: 'utf8mb4',
    // Report dates are the YYYY-MM-DD they are, never a Date shifted by a zone.
    dateStrings: true,
    // Decimals as their text, never a double (their trailing zeros dropped by `sessionMysqlPool`);
    // counts as numbers where they fit, text where they would not.
    decimalNumbers: false,
    supportBigNumbers: true,
    bigNumberStrings: false,
    // `extra` as the JSON text it is (MySQL's JSON type would be parsed, its decimals rounded).
    jsonStrings: true,
    // Statements kept prepared per connection, the least recently used closed first. The server
    // caps them for all its sessions together (max_prepared_stmt_count, 16382 by default): mysql2's
    // own 16,000 per connection would let a few processes' pools exhaust it.
    maxPreparedStatements: 100,
    // Offered only for the slice loader's LOAD DATA LOCAL INFILE, whose file is the rows it streams
    // (mysql2 reads no file of this machine for a server that asks: see runLoadDataLocal).
    flags: [localFiles ? 'LOCAL_FILES' : '-LOCAL_FILES'],
  });
  const db = new Kysely<Warehouse>({
    dialect: new MysqlDialect({ pool: sessionMysqlPool(pool, { location, localFiles }) }),
    plugins: [new OnConflictAsDuplicateKeyPlugin()],
  });
  return { db, sliceLock: new MysqlSliceLock(), location, close: () => db.destroy() };
}
