import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { freePort } from './free-port.js';
import { until } from './until.js';

const run = promisify(execFile);
const SERVER = process.env.TEST_MARIADB_BIN ?? '/usr/sbin/mariadbd';

export interface PrivateMariadbOptions {
  /**
   * Serve TLS with this certificate and key, and refuse connections without it
   * (`require_secure_transport`); `ca` verifies the certificates of clients that send one.
   */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer; readonly ca?: Buffer };
}

/**
 * A MariaDB server of the test's own on a free loopback port (root without a password, strict
 * `sql_mode` and `local_infile` on, as the shared one), so a test can restart it without touching
 * the shared server. Run as root, the server drops to the `mysql` user, which owns its data
 * directory. The caller must `destroy()` it, also when a test fails.
 */
export async function startPrivateMariadb(options: PrivateMariadbOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-private-mariadb-'));
  const asRoot = process.getuid?.() === 0;
  const data = join(dir, 'data');
  // A tmpdir of its own: a starting server deletes every `#sql…` file in its tmpdir it may, and in
  // /tmp those are the shared server's temporary tables, in use by other test files' queries.
  const temporary = join(dir, 'tmp');
  mkdirSync(temporary);
  const port = await freePort();
  const userOption = asRoot ? ['--user=mysql'] : [];
  const tlsOptions: string[] = [];
  let owner: { uid: number; gid: number } | undefined;
  /** Writes the server's certificate and key into its own directory: the `mysql` user cannot read the test's. */
  function writeCertificate(tls: NonNullable<PrivateMariadbOptions['tls']>): void {
    for (const [file, content] of [
      ['server-cert.pem', tls.cert],
      ['server-key.pem', tls.key],
      ['client-ca.pem', tls.ca ?? tls.cert],
    ] as const) {
      writeFileSync(join(dir, file), content);
      if (owner) chownSync(join(dir, file), owner.uid, owner.gid);
    }
  }
  if (options.tls) {
    tlsOptions.push(
      `--ssl-cert=${join(dir, 'server-cert.pem')}`,
      `--ssl-key=${join(dir, 'server-key.pem')}`,
      `--ssl-ca=${join(dir, 'client-ca.pem')}`,
      '--require-secure-transport=ON',
    );
  }
  let server: ChildProcess | undefined;

  async function start(): Promise<void> {
    const child = spawn(
      SERVER,
      [
        '--no-defaults',
        ...userOption,
        `--datadir=${data}`,
        `--tmpdir=${temporary}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(dir, 'server.sock')}`,
        `--pid-file=${join(dir, 'server.pid')}`,
        `--log-error=${join(dir, 'server.log')}`,
        '--innodb-buffer-pool-size=32M',
        '--skip-log-bin',
        '--local-infile=1',
        '--sql-mode=STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION',
        ...tlsOptions,
      ],
      { stdio: 'ignore' },
    );
    server = child;
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`mariadbd exited with ${child.exitCode}: ${readLog()}`);
        return serverAnswers();
      },
      30_000,
      `the private MariaDB on port ${port} to answer`,
      50,
    );
  }

  function readLog(): string {
    try {
      return readFileSync(join(dir, 'server.log'), 'utf8').trim().split('\n').slice(-5).join(' | ');
    } catch {
      return '(no log)';
    }
  }

  /** A connection as root, over TLS when the server requires it (the helper's own: whatever certificate the server has now). */
  function adminConnection(): Promise<mysql.Connection> {
    return mysql.createConnection({ host: '127.0.0.1', port, user: 'root', ...(options.tls ? { ssl: { rejectUnauthorized: false } } : {}) });
  }

  async function serverAnswers(): Promise<boolean> {
    try {
      const connection = await adminConnection();
      await connection.end();
      return true;
    } catch {
      return false;
    }
  }

  /** SIGTERM, as a deploy stops it: sessions are closed, and the server is gone until started again. */
  async function stop(): Promise<void> {
    const child = server;
    server = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }

  try {
    if (asRoot) {
      owner = { uid: Number((await run('id', ['-u', 'mysql'])).stdout.trim()), gid: Number((await run('id', ['-g', 'mysql'])).stdout.trim()) };
      chownSync(dir, owner.uid, owner.gid);
      chownSync(temporary, owner.uid, owner.gid);
    }
    if (options.tls) writeCertificate(options.tls);
    await run(
      'mariadb-install-db',
      [...userOption, `--datadir=${data}`, `--tmpdir=${temporary}`, '--auth-root-authentication-method=normal', '--skip-test-db', '--skip-name-resolve'],
      {
        cwd: dir,
        timeout: 60_000,
      },
    );
    await start();
  } catch (error) {
    await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not start a private MariaDB in ${dir}: ${(error as Error).message}`, { cause: error });
  }

  const serverUrl = `mysql://root@127.0.0.1:${port}`;
  return {
    port,
    /** `mysql://root@127.0.0.1:<port>`, without a database. */
    serverUrl,
    /** Creates an empty database (utf8mb4, as the shared server's test databases) and returns its URL. */
    async createDatabase(name: string): Promise<string> {
      const connection = await adminConnection();
      try {
        await connection.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      } finally {
        await connection.end();
      }
      return `${serverUrl}/${name}`;
    },
    /** One query on a short-lived connection (for watching `information_schema.processlist`). */
    async query<T>(text: string): Promise<T[]> {
      const connection = await adminConnection();
      try {
        const [rows] = await connection.query(text);
        return rows as T[];
      } finally {
        await connection.end();
      }
    },
    /** Stops the server (SIGTERM) and starts it again on the same port and data. */
    async restart(): Promise<void> {
      await stop();
      await start();
    },
    /** Restarts a TLS server with another certificate and key. */
    async useCertificate(tls: NonNullable<PrivateMariadbOptions['tls']>): Promise<void> {
      await stop();
      writeCertificate(tls);
      await start();
    },
    stop,
    async start(): Promise<void> {
      if (server === undefined) await start();
    },
    /** Stops the server and removes its directory. */
    async destroy(): Promise<void> {
      try {
        await stop();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export type PrivateMariadb = Awaited<ReturnType<typeof startPrivateMariadb>>;
