import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './free-port.js';

const run = promisify(execFile);
const BIN = process.env.TEST_POSTGRES_BIN ?? installedPostgresBin();

/** The newest Debian-installed server's binaries (/usr/lib/postgresql/<major>/bin), as .ci/run starts that cluster. */
function installedPostgresBin(): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return join(root, majors[0] ?? '15', 'bin');
}

export interface PrivatePostgresOptions {
  /**
   * Serve TLS with this certificate and key, and accept TCP connections only over it (`hostssl`).
   * `ca` verifies client certificates; `clientCertificateUser` (a role the caller creates) is let
   * in only with a certificate it signed (`clientcert=verify-ca`).
   */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer; readonly ca?: Buffer; readonly clientCertificateUser?: string };
}

/**
 * A Postgres cluster of the test's own on a free loopback port (trust auth, user `postgres`), so
 * a test can restart or stop it without touching the shared server. Postgres refuses to run as
 * root, so its commands run as the `postgres` user (`runuser`) with a data directory it owns.
 * Commands run asynchronously: the test's own event loop keeps working (loading) meanwhile.
 * The caller must `destroy()` it, also when a test fails.
 */
export async function startPrivatePostgres(options: PrivatePostgresOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-private-pg-'));
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
  const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
  chownSync(dir, uid, gid);
  const data = join(dir, 'data');
  const asPostgres = (command: string, args: string[]) => run('runuser', ['-u', 'postgres', '--', join(BIN, command), ...args], { cwd: dir, timeout: 60_000 });
  const port = await freePort();
  const pgCtl = (args: string[]) => asPostgres('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '30', ...args]);
  let running = false;
  const tlsOptions = options.tls
    ? ` -c ssl=on -c ssl_cert_file=${join(dir, 'server.crt')} -c ssl_key_file=${join(dir, 'server.key')}` + (options.tls.ca ? ` -c ssl_ca_file=${join(dir, 'client-ca.crt')}` : '')
    : '';
  // Given again at every start: pg_ctl start without them would try the default port and socket directory.
  const serverOptions = ['-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off${tlsOptions}`];
  /** The server's certificate and key, in its own directory: Postgres wants the key the server user's alone. */
  function writeCertificate(tls: NonNullable<PrivatePostgresOptions['tls']>): void {
    for (const [file, content] of [
      ['server.crt', tls.cert],
      ['server.key', tls.key],
    ] as const) {
      writeFileSync(join(dir, file), content, { mode: 0o600 });
      chownSync(join(dir, file), uid, gid);
    }
  }

  try {
    // No fsync: the data is a test's, and initdb's syncs take seconds on a busy disk.
    await asPostgres('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '--no-instructions']);
    if (options.tls) {
      writeCertificate(options.tls);
      if (options.tls.ca) {
        writeFileSync(join(dir, 'client-ca.crt'), options.tls.ca);
        chownSync(join(dir, 'client-ca.crt'), uid, gid);
      }
      // TCP connections only over TLS: `hostssl` where initdb wrote `host`; the first line that
      // matches decides, so the client-certificate user's comes first.
      const hba = join(data, 'pg_hba.conf');
      const user = options.tls.clientCertificateUser;
      const first = user === undefined ? '' : `hostssl all ${user} 127.0.0.1/32 trust clientcert=verify-ca\n`;
      writeFileSync(hba, first + readFileSync(hba, 'utf8').replace(/^host(\s)/gm, 'hostssl$1'));
    }
    await pgCtl([...serverOptions, 'start']);
    running = true;
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not start a private Postgres in ${dir}: ${(error as Error).message}`, { cause: error });
  }

  const serverUrl = `postgres://postgres@127.0.0.1:${port}`;
  /** The helper's own connections: over TLS when the server requires it, whatever its certificate is now. */
  const adminUrl = (database: string) => `${serverUrl}/${database}${options.tls ? '?sslmode=no-verify' : ''}`;
  return {
    port,
    /** `postgres://postgres@127.0.0.1:<port>`, without a database. */
    serverUrl,
    /** Creates an empty database and returns its URL. */
    async createDatabase(name: string): Promise<string> {
      const client = new pg.Client({ connectionString: adminUrl('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `${serverUrl}/${name}`;
    },
    /** One query on a short-lived connection (for watching `pg_stat_activity`). */
    async query<T extends pg.QueryResultRow>(database: string, text: string): Promise<T[]> {
      const client = new pg.Client({ connectionString: adminUrl(database) });
      await client.connect();
      try {
        return (await client.query<T>(text)).rows;
      } finally {
        await client.end();
      }
    },
    /** `pg_ctl restart -m fast`: sessions are terminated (57P01), new ones refused until it is back. */
    async restart(): Promise<void> {
      await pgCtl(['-m', 'fast', 'restart']);
    },
    /** Restarts a TLS server with another certificate and key. */
    async useCertificate(tls: NonNullable<PrivatePostgresOptions['tls']>): Promise<void> {
      await this.stop();
      writeCertificate(tls);
      await this.start();
    },
    async stop(): Promise<void> {
      if (!running) return;
      await pgCtl(['-m', 'immediate', 'stop']);
      running = false;
    },
    async start(): Promise<void> {
      if (running) return;
      await pgCtl([...serverOptions, 'start']);
      running = true;
    },
    /** Stops the cluster and removes its directory. */
    async destroy(): Promise<void> {
      try {
        await this.stop();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export type PrivatePostgres = Awaited<ReturnType<typeof startPrivatePostgres>>;
