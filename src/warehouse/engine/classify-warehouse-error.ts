import { ConfigError, SyncError, WarehouseError } from '../../errors/sync-error.js';
import { certificateCode, certificateReason } from '../../http/tls-verification-error.js';

/**
 * Database errors that pass by themselves: a lock held by another process, a dropped
 * connection, a server restarting, a serialization conflict. Everything else (a constraint, a
 * value the column refuses) will fail the same way again.
 */
const TRANSIENT_CODES: ReadonlySet<string> = new Set([
  // SQLite (better-sqlite3 puts the extended result code on `code`)
  'SQLITE_BUSY',
  'SQLITE_BUSY_SNAPSHOT',
  'SQLITE_BUSY_RECOVERY',
  'SQLITE_BUSY_TIMEOUT',
  'SQLITE_LOCKED',
  'SQLITE_LOCKED_SHAREDCACHE',
  'SQLITE_PROTOCOL',
  // Postgres SQLSTATEs: serialization failure, deadlock, admin/crash shutdown, cannot connect now
  '40001',
  '40P01',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  // MySQL and MariaDB (mysql2 puts the error's name on `code`): a deadlock (InnoDB rolled the
  // transaction back), a lock waited for too long, a server shutting down or out of connections,
  // a connection lost
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_SERVER_SHUTDOWN',
  'ER_CON_COUNT_ERROR',
  'PROTOCOL_CONNECTION_LOST',
  // sockets
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
]);

/**
 * The drivers' messages, with no code, for a connection that broke. pg: "Connection terminated
 * unexpectedly" (during a statement); "Client has encountered a connection error and is not
 * queryable" (the next statement, or a transaction's ROLLBACK, on a client whose server went away
 * between statements); "timeout exceeded when trying to connect" (the pool could not get a
 * connection in time). mysql2: "Can't add new command when connection is in closed state" (the
 * next statement on a connection whose server went away between statements).
 */
const CONNECTION_LOST = /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|connection is in closed state/i;

/** Node's and OpenSSL's words for a certificate that could not be verified (mysql2 keeps only the message). */
const CERTIFICATE_TROUBLE = /certificate|altnames|self[- ]signed|issuer/i;

/**
 * Postgres SQLSTATEs (and MySQL's error names) that say `DATABASE_URL` itself is wrong: no such database, a password or an
 * account the server refuses. Retrying cannot help; the command stops with exit 2.
 */
const CONFIGURATION_CODES: Readonly<Record<string, string>> = {
  '3D000': 'create it with createdb, or fix the database name in DATABASE_URL',
  '28P01': 'the server refused the password: check the user and password in DATABASE_URL',
  '28000':
    "the server refused the connection for this user: check the user in DATABASE_URL and the server's pg_hba.conf " +
    '(a server that accepts only TLS refuses a plain connection so: then add ?sslmode=verify-full)',
  ER_BAD_DB_ERROR: 'create it (CREATE DATABASE … CHARACTER SET utf8mb4), or fix the database name in DATABASE_URL',
  // MariaDB answers a connection without TLS to a server that requires it (require_secure_transport) this way too.
  ER_ACCESS_DENIED_ERROR:
    'the server refused the user or password: check them in DATABASE_URL (a server that accepts only TLS refuses them so too: then add ?ssl-mode=VERIFY_IDENTITY)',
  ER_SECURE_TRANSPORT_REQUIRED: 'the server accepts only TLS connections: add ?ssl-mode=VERIFY_IDENTITY to DATABASE_URL (and &ssl-ca=/path/to/ca.pem for a private CA)',
  ER_DBACCESS_DENIED_ERROR: 'the user may not use this database: GRANT it the rights, or fix the user in DATABASE_URL',
};

/**
 * PgBouncer's refusals of a login, all sent as `08P01` (a connection exception, which would be
 * waited out as an outage): its own (a user its `auth_file` lacks or whose password differs, a
 * database its `[databases]` lacks) and the server's, relayed with the server's message but not
 * its code (no such role or database). A restart during a deploy says none of these.
 */
const POOLER_LOGIN_REFUSALS: readonly { readonly message: RegExp; readonly fix: string }[] = [
  { message: /^role ".*" does not exist/, fix: 'create the role on the server (createuser), or fix the user in DATABASE_URL' },
  { message: /^database ".*" does not exist/, fix: 'create it on the server (createdb), or fix the database name in DATABASE_URL' },
  { message: /^no such database: /, fix: "add it under [databases] in the pooler's pgbouncer.ini, or fix the database name in DATABASE_URL" },
  {
    message: /authentication failed|^no such user/,
    fix: "add the user to the pooler's auth_file (userlist.txt) with its password, or fix the user and password in DATABASE_URL",
  },
];

/**
 * PgBouncer's answer to a BEGIN when it pools by statement (`pool_mode = statement`), after which
 * it closes the connection: report-sync writes every slice in a transaction (and migrates in one),
 * so nothing could ever be loaded through such a pool. Not a connection that broke by chance.
 */
const STATEMENT_POOLING = /transaction blocks not allowed in statement pooling mode/i;

/**
 * Errors of JavaScript itself, with no database code: report-sync's own bug (or a driver refusing
 * a value report-sync should never have handed it), never the warehouse's answer to a write.
 */
const JAVASCRIPT_ERRORS = [TypeError, RangeError, ReferenceError, SyntaxError];

/**
 * Wraps a database error as a {@link WarehouseError}, retryable when the trouble is transient, or
 * as a {@link ConfigError} when the server says `DATABASE_URL` names something that is not there
 * or a pooler in front of it refuses transactions.
 */
export function classifyWarehouseError(error: unknown, action: string): SyncError {
  if (error instanceof SyncError) return error;
  const err = error instanceof Error ? error : new Error(String(error));
  const code = String((err as { code?: unknown }).code ?? '');
  if (code === '' && JAVASCRIPT_ERRORS.some((kind) => err instanceof kind)) {
    return new SyncError('UNEXPECTED', `unexpected error while ${action}: ${err.message} (report-sync's own, not the warehouse's answer: please report it with the logged stack)`, {
      cause: err,
    });
  }
  const misconfigured = CONFIGURATION_CODES[code];
  if (misconfigured) return new ConfigError(`warehouse refused the connection while ${action}: ${err.message} (${code}); ${misconfigured}`, { cause: err });
  const refusal = code === '08P01' ? POOLER_LOGIN_REFUSALS.find((candidate) => candidate.message.test(err.message)) : undefined;
  if (refusal)
    return new ConfigError(`warehouse refused the connection while ${action}: ${err.message} (${code}, from a pooler such as PgBouncer); ${refusal.fix}`, { cause: err });
  // A certificate that cannot be verified fails every connection the same way: no retry or wait helps.
  // mysql2 replaces the TLS error's own code with its HANDSHAKE_SSL_ERROR, which a connection
  // dropped during the handshake (a restart) gets too: only the message tells them apart.
  const certificate = certificateCode(err) ?? (code === 'HANDSHAKE_SSL_ERROR' && CERTIFICATE_TROUBLE.test(err.message) ? code : undefined);
  if (certificate !== undefined) {
    return new ConfigError(
      `TLS with the warehouse failed while ${action}: ${certificateReason(err)} (${certificate}); if the server is genuine, trust its CA ` +
        '(ssl-ca=/path/to/ca.pem in a mysql:// DATABASE_URL, sslmode=verify-full&sslrootcert=/path/to/ca.pem in a postgres:// one, or NODE_EXTRA_CA_CERTS=/path/to/ca.pem), ' +
        'and connect by a host name the certificate names',
      { cause: err },
    );
  }
  if (STATEMENT_POOLING.test(err.message)) {
    return new ConfigError(
      `warehouse refused a transaction while ${action}: ${err.message} (PgBouncer's pool_mode = statement); report-sync writes every slice in a transaction: ` +
        'set pool_mode = transaction (or session) for this database in pgbouncer.ini',
      { cause: err },
    );
  }
  // Postgres class 08: connection exceptions. pg's own connection-loss errors carry no code.
  const transient = TRANSIENT_CODES.has(code) || code === 'HANDSHAKE_SSL_ERROR' || code.startsWith('08') || CONNECTION_LOST.test(err.message);
  return new WarehouseError(
    transient ? 'WAREHOUSE_UNAVAILABLE' : 'WAREHOUSE_REJECTED',
    `warehouse ${transient ? 'unavailable' : 'refused the statement'} while ${action}: ${err.message}${code ? ` (${code})` : ''}`,
    { cause: err },
  );
}
