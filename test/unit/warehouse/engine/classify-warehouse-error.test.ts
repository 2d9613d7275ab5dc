import { describe, expect, it } from 'vitest';
import { classifyWarehouseError } from '../../../../src/warehouse/engine/classify-warehouse-error.js';

function withCode(message: string, code?: string): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

describe('classifyWarehouseError', () => {
  it.each([
    ['SQLite lock held by another process', withCode('database is locked', 'SQLITE_BUSY')],
    ['Postgres restart: session terminated', withCode('terminating connection due to administrator command', '57P01')],
    ['Postgres starting up or shutting down', withCode('the database system is starting up', '57P03')],
    ['Postgres not listening', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['connection class 08', withCode('connection failure', '08006')],
    // PgBouncer's own protocol errors share 08P01 with its answer to a BEGIN in statement pooling.
    ['a pooler dropping the client', withCode('server conn crashed?', '08P01')],
    // After a failed server login PgBouncer holds its pool back a while: a restart says this too.
    ['a pooler whose server logins are failing', withCode('server login has been failing, try again later (server_login_retry)', '08P01')],
    ['pg: connection lost during a statement', withCode('Connection terminated unexpectedly')],
    ['pg: next statement on a client whose server went away', withCode('Client has encountered a connection error and is not queryable')],
    ['pg pool: no connection in time', withCode('timeout exceeded when trying to connect')],
    ['MySQL deadlock (the transaction was rolled back)', withCode('Deadlock found when trying to get lock; try restarting transaction', 'ER_LOCK_DEADLOCK')],
    ['MySQL row lock waited for too long', withCode('Lock wait timeout exceeded; try restarting transaction', 'ER_LOCK_WAIT_TIMEOUT')],
    ['MySQL server shutting down', withCode('Server shutdown in progress', 'ER_SERVER_SHUTDOWN')],
    ['mysql2: connection lost', withCode('Connection lost: The server closed the connection.', 'PROTOCOL_CONNECTION_LOST')],
    ['mysql2: next statement on a connection whose server went away', withCode("Can't add new command when connection is in closed state")],
    // mysql2 gives a connection dropped during the TLS handshake the code it gives a refused certificate.
    ['mysql2: connection dropped during the TLS handshake', withCode('Client network socket disconnected before secure TLS connection was established', 'HANDSHAKE_SSL_ERROR')],
  ])('%s is WAREHOUSE_UNAVAILABLE (retried)', (_name, error) => {
    const classified = classifyWarehouseError(error, 'loading a slice');
    expect(classified.code).toBe('WAREHOUSE_UNAVAILABLE');
    expect(classified.retryable).toBe(true);
    expect(classified.message).toContain('while loading a slice');
  });

  it.each([
    ['a constraint', withCode('duplicate key value violates unique constraint', '23505')],
    ['a value the column refuses', withCode('invalid input syntax for type numeric', '22P02')],
    ['SQLite constraint', withCode('NOT NULL constraint failed', 'SQLITE_CONSTRAINT_NOTNULL')],
    ['MySQL: a value out of the column’s range (strict mode)', withCode("Out of range value for column 'closing_price' at row 1", 'ER_WARN_DATA_OUT_OF_RANGE')],
  ])('%s is WAREHOUSE_REJECTED (final)', (_name, error) => {
    const classified = classifyWarehouseError(error, 'loading a slice');
    expect(classified.code).toBe('WAREHOUSE_REJECTED');
    expect(classified.retryable).toBe(false);
    expect(classified.message).toMatch(/^warehouse refused the statement while loading a slice: /);
  });

  it('a read the warehouse refuses is said as a statement refused, not a write', () => {
    const classified = classifyWarehouseError(withCode("Table 'warehouse.report_loads_monthly' doesn't exist", 'ER_NO_SUCH_TABLE'), 'counting the ledger by month');
    expect(classified.message).toBe("warehouse refused the statement while counting the ledger by month: Table 'warehouse.report_loads_monthly' doesn't exist (ER_NO_SUCH_TABLE)");
  });

  it.each([
    ['a RangeError', new RangeError('Invalid array length')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'rows')")],
  ])('%s of report-sync itself is UNEXPECTED (a bug to report), not the warehouse refusing the write', (_name, error) => {
    const classified = classifyWarehouseError(error, 'loading a slice');
    expect(classified.code).toBe('UNEXPECTED');
    expect(classified.retryable).toBe(false);
    expect(classified.message).toBe(
      `unexpected error while loading a slice: ${error.message} (report-sync's own, not the warehouse's answer: please report it with the logged stack)`,
    );
    expect(classified.cause).toBe(error);
  });

  it('a driver error carrying a database code stays the warehouse’s answer, whatever its class', () => {
    const classified = classifyWarehouseError(Object.assign(new RangeError('value out of range for type integer'), { code: '22003' }), 'loading a slice');
    expect(classified.code).toBe('WAREHOUSE_REJECTED');
  });
});

describe('classifyWarehouseError: a certificate that cannot be verified', () => {
  const NODE_24_ADVICE = '; if the root CA is installed locally, try running Node.js with --use-system-ca';

  it.each([
    ['pg', 'DEPTH_ZERO_SELF_SIGNED_CERT'],
    ['mysql2', 'HANDSHAKE_SSL_ERROR'],
  ])('words it the same on every Node line: Node 24’s own advice (a flag Node 20 lacks) is left out (%s)', (_driver, code) => {
    const node24 = classifyWarehouseError(withCode(`self-signed certificate${NODE_24_ADVICE}`, code), 'migrating');
    const node20 = classifyWarehouseError(withCode('self-signed certificate', code), 'migrating');
    expect(node24.message).toBe(node20.message);
    expect(node20.message).toMatch(new RegExp(`: self-signed certificate \\(${code}\\); if the server is genuine, trust its CA \\(ssl-ca=`));
    expect(node24.message).not.toContain('--use-system-ca');
  });
});

describe('classifyWarehouseError: DATABASE_URL itself is wrong', () => {
  it.each([
    ['a database that does not exist', withCode('database "typo" does not exist', '3D000'), /createdb/],
    ['a password the server refuses', withCode('password authentication failed for user "x"', '28P01'), /password in DATABASE_URL/],
    ['an account the server refuses', withCode('no pg_hba.conf entry for host', '28000'), /user in DATABASE_URL/],
    ['a MySQL database that does not exist', withCode("Unknown database 'typo'", 'ER_BAD_DB_ERROR'), /CREATE DATABASE/],
    [
      'a MySQL user or password the server refuses',
      withCode("Access denied for user 'x'@'localhost' (using password: YES)", 'ER_ACCESS_DENIED_ERROR'),
      /user or password: check them in DATABASE_URL \(a server that accepts only TLS refuses them so too: then add \?ssl-mode=VERIFY_IDENTITY\)/,
    ],
    [
      'MySQL 8 requiring TLS of a plain connection',
      withCode('Connections using insecure transport are prohibited', 'ER_SECURE_TRANSPORT_REQUIRED'),
      /add \?ssl-mode=VERIFY_IDENTITY/,
    ],
    [
      'a warehouse certificate that cannot be verified (pg)',
      withCode('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'),
      /TLS with the warehouse failed .*trust its CA \(ssl-ca=/,
    ],
    ['a warehouse certificate that cannot be verified (mysql2)', withCode('self-signed certificate', 'HANDSHAKE_SSL_ERROR'), /TLS with the warehouse failed .*NODE_EXTRA_CA_CERTS/],
    [
      'a warehouse certificate for another host (mysql2)',
      withCode("Hostname/IP does not match certificate's altnames: Host: localhost. is not in the cert's altnames: DNS:warehouse.example", 'HANDSHAKE_SSL_ERROR'),
      /TLS with the warehouse failed .*connect by a host name the certificate names/,
    ],
    ['PgBouncer pooling by statement', withCode('transaction blocks not allowed in statement pooling mode', '08P01'), /set pool_mode = transaction \(or session\)/],
    // PgBouncer relays a refused login as 08P01, the server's message without its code.
    ['PgBouncer: a role the server lacks', withCode('role "report_sync" does not exist', '08P01'), /create the role on the server \(createuser\)/],
    ['PgBouncer: a database the server lacks', withCode('database "report_sync" does not exist', '08P01'), /create it on the server \(createdb\)/],
    ['PgBouncer: a database its [databases] lacks', withCode('no such database: typo', '08P01'), /under \[databases\] in the pooler's pgbouncer\.ini/],
    ['PgBouncer: a user its auth_file lacks (trust)', withCode('"trust" authentication failed', '08P01'), /to the pooler's auth_file \(userlist\.txt\)/],
    ['PgBouncer: a wrong password', withCode('password authentication failed', '08P01'), /to the pooler's auth_file \(userlist\.txt\)/],
  ])('%s is CONFIG_INVALID (exit 2, nothing retried)', (_name, error, hint) => {
    const classified = classifyWarehouseError(error, 'migrating');
    expect(classified.code).toBe('CONFIG_INVALID');
    expect(classified.fatal).toBe(true);
    expect(classified.retryable).toBe(false);
    expect(classified.message).toMatch(hint);
  });
});
