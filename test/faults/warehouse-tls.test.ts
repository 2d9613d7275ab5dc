import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Warehouse } from '../../src/warehouse/engine/warehouse-schema.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { startPrivateMariadb } from '../helpers/private-mariadb.js';
import { startPrivatePostgres } from '../helpers/private-postgres.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { makeClientCertificate, makeSelfSignedCertificate, removeCertificate } from '../helpers/tls-front.js';

/*
 * A warehouse server that accepts only TLS, as managed database services do: a Postgres (`hostssl`)
 * and a MariaDB (`require_secure_transport`) of the test's own, with a self-signed certificate. The
 * TLS settings are the DATABASE_URL's parameters, as each server's own clients name them
 * (Postgres: `sslmode`, `sslrootcert`; MySQL: `ssl-mode`, `ssl-ca`); every mode that encrypts
 * verifies the certificate and the host name it names. Each refusal stops the command at once
 * with exit 2, saying what to write.
 */

const DAY = '2024-05-06'; // a Monday
const RUN = ['run', '--from', DAY, '--to', DAY];

type Certificate = ReturnType<typeof makeSelfSignedCertificate>;

interface TlsServer {
  readonly port: number;
  createDatabase(name: string): Promise<string>;
  useCertificate(tls: { cert: Buffer; key: Buffer }): Promise<void>;
  destroy(): Promise<void>;
}

interface TlsDialect {
  readonly name: string;
  start(tls: { cert: Buffer; key: Buffer }): Promise<TlsServer>;
  /** The URL of database `tls_only` on `host`. */
  url(server: TlsServer, host: string, parameters?: string): string;
  /** Encrypted and verified, with the CA of `caFile` (`mode`: the dialect's spelling of it). */
  readonly verified: (caFile: string) => string;
  /** The mode named like MySQL's REQUIRED or Postgres's require, with the CA: verified as strictly. */
  readonly required: (caFile: string) => string;
  /** Encrypted and verified, trusting only the CAs of this machine. */
  readonly withoutCa: string;
  /** What a plain connection's refusal says. */
  readonly plainRefusal: RegExp;
  /** What an unverifiable certificate's refusal names as its code. */
  readonly selfSignedCode: string;
  /** Whether the session the warehouse's pool hands out is encrypted, as the server sees it. */
  encrypted(db: Kysely<Warehouse>): Promise<boolean>;
}

const DIALECTS: readonly TlsDialect[] = [
  {
    name: 'Postgres',
    start: (tls) => startPrivatePostgres({ tls }),
    url: (server, host, parameters = '') => `postgres://postgres@${host}:${server.port}/tls_only${parameters}`,
    verified: (caFile) => `?sslmode=verify-full&sslrootcert=${encodeURIComponent(caFile)}`,
    required: (caFile) => `?sslmode=require&sslrootcert=${encodeURIComponent(caFile)}`,
    withoutCa: '?sslmode=verify-full',
    plainRefusal: /no pg_hba\.conf entry .*no encryption .*a server that accepts only TLS refuses a plain connection so: then add \?sslmode=verify-full/,
    selfSignedCode: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    encrypted: async (db) => (await sql<{ ssl: boolean }>`select ssl from pg_stat_ssl where pid = pg_backend_pid()`.execute(db)).rows[0]!.ssl,
  },
  {
    name: 'MySQL (MariaDB)',
    start: (tls) => startPrivateMariadb({ tls }),
    url: (server, host, parameters = '') => `mysql://root@${host}:${server.port}/tls_only${parameters}`,
    verified: (caFile) => `?ssl-mode=VERIFY_IDENTITY&ssl-ca=${encodeURIComponent(caFile)}`,
    required: (caFile) => `?ssl-mode=REQUIRED&ssl-ca=${encodeURIComponent(caFile)}`,
    withoutCa: '?ssl-mode=VERIFY_IDENTITY',
    // MariaDB refuses a plain connection to a server that requires TLS as a refused user.
    plainRefusal: /Access denied .*a server that accepts only TLS refuses them so too: then add \?ssl-mode=VERIFY_IDENTITY/,
    // mysql2 replaces the TLS error's code with its own.
    selfSignedCode: 'HANDSHAKE_SSL_ERROR',
    encrypted: async (db) => /^TLSv1\.[23]$/.test((await sql<{ Value: string }>`show session status like 'Ssl_version'`.execute(db)).rows[0]!.Value),
  },
];

describe.each(DIALECTS)('a $name warehouse that accepts only TLS', (dialect) => {
  let server: TlsServer;
  let rig: SyncRig;
  let certificate: Certificate;
  let elsewhere: Certificate;

  beforeAll(async () => {
    certificate = makeSelfSignedCertificate('DNS:localhost,IP:127.0.0.1');
    elsewhere = makeSelfSignedCertificate('DNS:warehouse.example');
    server = await dialect.start({ cert: certificate.cert, key: certificate.key });
    await server.createDatabase('tls_only');
    rig = await startSyncRig({ settings: { portfolios: [1001, 1002], reportTypes: ['index'], startup: { timeoutMs: 30_000 } } });
  }, 90_000);
  afterAll(async () => {
    await rig?.close();
    await server?.destroy();
    for (const made of [certificate, elsewhere]) if (made) removeCertificate(made.dir);
  }, 60_000);

  /** A command that must stop at once, without waiting out startup.timeoutMs or retrying. */
  async function refused(args: string[], databaseUrl: string): Promise<string> {
    const started = Date.now();
    const result = await rig.cli(args, { DATABASE_URL: databaseUrl });
    const output = `${result.stderr}${result.logs}`;
    expect(result.code, output).toBe(2);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(output).not.toContain('waiting for it');
    expect(output).not.toMatch(/^\s+at .*:\d+:\d+\)?$/m); // no stack trace
    return output;
  }

  it('a plain connection is refused at once, saying a server that accepts only TLS answers so and what to add', async () => {
    expect(await refused(['migrate'], dialect.url(server, '127.0.0.1'))).toMatch(dialect.plainRefusal);
  });

  it('a certificate no CA of this machine signed is refused at once, naming verification and how to trust its CA', async () => {
    const output = await refused(['migrate'], dialect.url(server, 'localhost', dialect.withoutCa));
    expect(output).toContain(`TLS with the warehouse failed while`);
    expect(output).toMatch(new RegExp(`self-signed certificate \\(${dialect.selfSignedCode}\\); if the server is genuine, trust its CA \\(ssl-ca=`));
  });

  it('with its CA named, migrates and loads over TLS, verified by the host name the certificate names', async () => {
    const trusted = dialect.url(server, 'localhost', dialect.verified(certificate.certFile));
    const migrated = await rig.cli(['migrate'], { DATABASE_URL: trusted });
    expect(migrated.code, migrated.stderr).toBe(0);
    const loaded = await rig.cli(RUN, { DATABASE_URL: trusted });
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(loaded.stdout).toMatch(/loaded\s+2/);

    const warehouse = await openWarehouse(trusted);
    try {
      expect(await dialect.encrypted(warehouse.db)).toBe(true);
      expect(await warehouse.db.selectFrom('report_loads').select('status').execute()).toEqual([{ status: 'loaded' }, { status: 'loaded' }]);
    } finally {
      await warehouse.close();
    }
  });

  it('the mode named "require" is verified as strictly: a certificate for another host is refused at once, naming the mismatch', async () => {
    await server.useCertificate({ cert: elsewhere.cert, key: elsewhere.key });
    try {
      const output = await refused(['migrate'], dialect.url(server, 'localhost', dialect.required(elsewhere.certFile)));
      expect(output).toMatch(/TLS with the warehouse failed .*Hostname\/IP does not match certificate's altnames.*connect by a host name the certificate names/);
    } finally {
      await server.useCertificate({ cert: certificate.cert, key: certificate.key });
    }
  });
});

/** A server whose user `client_cert` must present a client certificate signed by `ca`, with the database `tls_client`. */
interface ClientCertificateDialect {
  readonly name: string;
  start(tls: { cert: Buffer; key: Buffer; ca: Buffer }): Promise<{ readonly port: number; destroy(): Promise<void> }>;
  readonly scheme: string;
  /** The server verified with its CA file, as the dialect spells it. */
  serverCa(caFile: string): string;
  clientCertificate(certFile: string, keyFile: string): string;
  /** What the refusal of a connection without the certificate says. */
  readonly refusal: RegExp;
}

const CLIENT_CERTIFICATE_DIALECTS: readonly ClientCertificateDialect[] = [
  {
    name: 'Postgres (clientcert=verify-ca)',
    start: async (tls) => {
      const server = await startPrivatePostgres({ tls: { ...tls, clientCertificateUser: 'client_cert' } });
      await server.query('postgres', 'create role client_cert login');
      await server.query('postgres', 'create database tls_client owner client_cert');
      return server;
    },
    scheme: 'postgres',
    serverCa: (caFile) => `?sslmode=verify-full&sslrootcert=${encodeURIComponent(caFile)}`,
    clientCertificate: (certFile, keyFile) => `&sslcert=${encodeURIComponent(certFile)}&sslkey=${encodeURIComponent(keyFile)}`,
    refusal: /connection requires a valid client certificate/,
  },
  {
    name: 'MySQL (MariaDB, REQUIRE X509)',
    start: async (tls) => {
      const server = await startPrivateMariadb({ tls });
      await server.createDatabase('tls_client');
      await server.query("create user 'client_cert'@'%' require x509");
      await server.query("grant all on tls_client.* to 'client_cert'@'%'");
      return server;
    },
    scheme: 'mysql',
    serverCa: (caFile) => `?ssl-mode=VERIFY_IDENTITY&ssl-ca=${encodeURIComponent(caFile)}`,
    clientCertificate: (certFile, keyFile) => `&ssl-cert=${encodeURIComponent(certFile)}&ssl-key=${encodeURIComponent(keyFile)}`,
    refusal: /Access denied for user 'client_cert'/,
  },
];

describe.each(CLIENT_CERTIFICATE_DIALECTS)('a $name user that must present a client certificate', (dialect) => {
  let server: { readonly port: number; destroy(): Promise<void> };
  let rig: SyncRig;
  let certificate: Certificate;
  let client: ReturnType<typeof makeClientCertificate>;
  const url = (parameters: string) => `${dialect.scheme}://client_cert@localhost:${server.port}/tls_client${parameters}`;

  beforeAll(async () => {
    certificate = makeSelfSignedCertificate('DNS:localhost,IP:127.0.0.1');
    client = makeClientCertificate();
    server = await dialect.start({ cert: certificate.cert, key: certificate.key, ca: client.ca });
    rig = await startSyncRig({ settings: { portfolios: [1001], reportTypes: ['index'] } });
  }, 90_000);
  afterAll(async () => {
    await rig?.close();
    await server?.destroy();
    for (const made of [certificate, client]) if (made) removeCertificate(made.dir);
  }, 60_000);

  it('is refused without one, exit 2, and migrates and loads with it', async () => {
    const serverCa = dialect.serverCa(certificate.certFile);
    const without = await rig.cli(['migrate'], { DATABASE_URL: url(serverCa) });
    expect(without.code).toBe(2);
    expect(`${without.stderr}${without.logs}`).toMatch(dialect.refusal);

    const withCertificate = url(serverCa + dialect.clientCertificate(client.certFile, client.keyFile));
    const migrated = await rig.cli(['migrate'], { DATABASE_URL: withCertificate });
    expect(migrated.code, migrated.stderr).toBe(0);
    const loaded = await rig.cli(RUN, { DATABASE_URL: withCertificate });
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(loaded.stdout).toMatch(/loaded\s+1/);
  });
});

describe('a DATABASE_URL with TLS parameters its driver would not use', () => {
  let rig: SyncRig;
  beforeAll(async () => {
    rig = await startSyncRig();
  });
  afterAll(async () => {
    await rig?.close();
  });

  it.each([
    [
      "Postgres's sslmode in a mysql:// URL",
      'mysql://root@127.0.0.1:1/tls_only?sslmode=require',
      /has the parameter sslmode, which a mysql:\/\/ URL does not take: use ssl-mode \(DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY\), ssl-ca \(a CA file\), ssl-cert and ssl-key/,
    ],
    [
      "MySQL's ssl-mode in a postgres:// URL",
      'postgres://postgres@127.0.0.1:1/tls_only?ssl-mode=REQUIRED',
      /has the parameter ssl-mode, which a postgres:\/\/ URL does not take: use sslmode \(disable, or verify-full to encrypt and verify\) and sslrootcert/,
    ],
    [
      'a CA file that is not there',
      'postgres://postgres@127.0.0.1:1/tls_only?sslmode=verify-full&sslrootcert=/no/such/ca.pem',
      /has sslrootcert=\/no\/such\/ca\.pem, which cannot be read \(ENOENT/,
    ],
  ])('%s is refused before any connection, exit 2, naming what to write', async (_name, databaseUrl, said) => {
    const result = await rig.cli(['migrate'], { DATABASE_URL: databaseUrl });
    const output = `${result.stderr}${result.logs}`;
    expect(result.code, output).toBe(2);
    expect(output).toMatch(said);
    expect(output).not.toContain('waiting for it');
  });
});
