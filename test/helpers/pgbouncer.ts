import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

/** Debian's pgbouncer (`.ci/run` installs it); TEST_PGBOUNCER_BIN names another. */
const BIN = process.env.TEST_PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

export type PoolMode = 'session' | 'transaction' | 'statement';

export interface PgBouncerOptions {
  /** The database it stands in front of: `postgres://user@host:port/name` (trust auth, no password). */
  readonly databaseUrl: string;
  readonly poolMode: PoolMode;
  /**
   * Server connections per database and user. Small by default, so that the clients of several
   * processes really do share server connections, as they would in production.
   * @defaultValue 2
   */
  readonly poolSize?: number;
}

export interface PgBouncer {
  /** `databaseUrl` with the host and port of the pooler. */
  readonly url: string;
  readonly port: number;
  /** Everything it logged so far (its connections, its errors), for a failing test's message. */
  log(): string;
  /** Stops it (closing its server connections) and removes its files. */
  stop(): Promise<void>;
}

/**
 * PgBouncer on a free loopback port in front of one database, configured as the operations page
 * says (`docs/operations.md`, "Postgres behind PgBouncer"): trust auth, `pool_mode` as asked. It
 * refuses to run as root, so as root it drops to the `postgres` user (`-u`), which must then be
 * able to read its directory. The caller must `stop()` it, also when a test fails.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  try {
    accessSync(BIN, constants.X_OK);
  } catch {
    throw new Error(`${BIN} is missing: install Debian's pgbouncer (apt-get install pgbouncer, as .ci/run does) or set TEST_PGBOUNCER_BIN`);
  }
  const target = new URL(options.databaseUrl);
  const database = target.pathname.slice(1);
  const user = decodeURIComponent(target.username);
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-pgbouncer-'));
  chmodSync(dir, 0o755);
  // A port taken between freePort() and pgbouncer's bind (another test) is tried again with another.
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    const config = join(dir, 'pgbouncer.ini');
    writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`, { mode: 0o644 });
    writeFileSync(
      config,
      [
        '[databases]',
        `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'userlist.txt')}`,
        `pool_mode = ${options.poolMode}`,
        `default_pool_size = ${options.poolSize ?? 2}`,
        'max_client_conn = 200',
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
    const asRoot = process.getuid?.() === 0;
    const child = spawn(BIN, [...(asRoot ? ['-u', 'postgres'] : []), config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const listening = await untilListening(child, () => log, port);
    if (listening) {
      target.host = `127.0.0.1:${port}`;
      return {
        url: target.toString(),
        port,
        log: () => log,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) {
            const exited = once(child, 'exit');
            child.kill('SIGTERM');
            await exited;
          }
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    if (attempt === 3 || !/Address already in use/i.test(log)) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start: ${log.trim() || 'no output'}`);
    }
  }
}

/** Resolves true once pgbouncer says it listens on `port`, false if it exits first (a port taken, a bad config). */
async function untilListening(child: ChildProcess, log: () => string, port: number): Promise<boolean> {
  const exited = new Promise<false>((resolve) => child.once('exit', () => resolve(false)));
  const listening = new Promise<true>((resolve) => {
    const look = () => {
      if (!log().includes(`listening on 127.0.0.1:${port}`)) return;
      child.stderr?.off('data', look);
      resolve(true);
    };
    child.stderr?.on('data', look);
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(resolve, 10_000, false)));
  const started = await Promise.race([listening, exited, timeout]);
  clearTimeout(timer);
  if (!started && child.exitCode === null) {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
  return started;
}
