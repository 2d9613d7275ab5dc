import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, SyncError } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';
import { spoolStorageError } from './spool-storage-error.js';

export interface SpoolDirectoryOptions {
  /** Told of every leftover removed (with its size) and of every one that could not be. */
  readonly logger: Logger;
  /** Where `report-sync-spool/` is made. @defaultValue os.tmpdir(), which follows TMPDIR */
  readonly parent?: string;
  /**
   * Another host's directory (a /tmp shared between containers) untouched this long is removed:
   * its process cannot be asked whether it is alive. @defaultValue one day
   */
  readonly staleAfterMs?: number;
}

/** The folder under the parent that holds one directory per process. */
const ROOT_NAME = 'report-sync-spool';
const DAY_MS = 24 * 60 * 60 * 1000;
/** `<host>-<pid>-<random>`; the host may hold dashes itself, so the name is read from its end. */
const OWNER_NAME = /^(.+)-(\d+)-([0-9a-f]{6,})$/;

/**
 * Directories this process opened and has not closed. Process-wide on purpose: a directory bearing
 * our own pid is taken for an earlier incarnation's (pid 1 in containers), unless another part of
 * this process opened it.
 */
const openHere = new Set<string>();

/**
 * Where bodies too large for memory go (`report-sync-spool/<host>-<pid>-<random>/`, mode 0700), one
 * per process, owned by whoever builds the export client. Opening it removes what killed processes
 * left (a `kill -9` skips `dispose()`; a crash loop would fill the disk); `close()` removes its own.
 */
export class SpoolDirectory {
  /** This process's directory. */
  readonly path: string;
  readonly #root: string;
  #closed = false;

  private constructor(root: string, path: string) {
    this.#root = root;
    this.path = path;
  }

  /**
   * Makes the process's directory after removing dead processes' leftovers (logged; failures skipped).
   * @throws SyncError (`LOCAL_STORAGE`) naming TMPDIR and the path when the parent is missing or not
   *   a writable directory, or full; ConfigError when `report-sync-spool` is not this user's private directory
   */
  static async open(options: SpoolDirectoryOptions): Promise<SpoolDirectory> {
    const parent = options.parent ?? tmpdir();
    const root = join(parent, ROOT_NAME);
    const path = join(root, `${safeHostName()}-${process.pid}-${randomBytes(3).toString('hex')}`);
    try {
      await prepareRoot(root);
    } catch (error) {
      throw openError(error, parent, root);
    }
    await removeLeftovers(root, options.logger, options.staleAfterMs ?? DAY_MS);
    try {
      await mkdir(path, { mode: 0o700 });
    } catch (error) {
      throw openError(error, parent, root);
    }
    openHere.add(path);
    return new SpoolDirectory(root, path);
  }

  /**
   * A new, empty directory for one body, inside {@link path}; the body removes it.
   *
   * @throws SyncError `LOCAL_STORAGE` naming the directory when it cannot be made
   */
  async makeBodyDirectory(): Promise<string> {
    if (this.#closed) throw new SyncError('UNEXPECTED', `the spool directory ${this.path} was used after it was closed`);
    try {
      return await mkdtemp(join(this.path, 'body-'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw spoolStorageError(error, this.path);
    }
    // A long-running worker's idle directory may be swept by a /tmp cleaner (systemd-tmpfiles) or by
    // a process on another host sharing /tmp: make it again rather than fail every slice from now on.
    try {
      await prepareRoot(this.#root);
      await mkdir(this.path, { mode: 0o700 });
      return await mkdtemp(join(this.path, 'body-'));
    } catch (error) {
      throw spoolStorageError(error, this.path);
    }
  }

  /** Removes the process's directory and whatever bodies are still in it. */
  async close(): Promise<void> {
    this.#closed = true;
    openHere.delete(this.path);
    await rm(this.path, { recursive: true, force: true });
  }
}

/**
 * Makes (or accepts) the shared root: a real directory (not a symlink) of this user, 0700. One that
 * is another user's could be swapped under our bodies, so it is refused rather than used.
 */
async function prepareRoot(root: string): Promise<void> {
  try {
    await mkdir(root, { mode: 0o700 });
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stat = await lstat(root);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) {
    throw new ConfigError(`${root} is not a directory of this user's (a file, a link or another user's directory): remove it, or set TMPDIR to a directory of your own`);
  }
  // An earlier version or a hand-made directory may let others in.
  if ((stat.mode & 0o077) !== 0) await chmod(root, 0o700);
}

/** The host name as it can appear in a file name. */
function safeHostName(): string {
  return hostname().replace(/[^A-Za-z0-9._-]/g, '_') || 'host';
}

/** Why an entry of the root is a leftover, or undefined when it may still be in use. */
function leftoverReason(name: string, newestMs: number, nowMs: number, staleAfterMs: number): string | undefined {
  const owner = OWNER_NAME.exec(name);
  const pid = owner ? Number(owner[2]) : 0;
  if (owner && pid > 0 && owner[1] === safeHostName()) {
    if (pid === process.pid) return `left by an earlier process with this process's pid ${pid} (a restarted container)`;
    return isAlive(pid) ? undefined : `left by process ${pid}, which is gone`;
  }
  if (nowMs - newestMs > staleAfterMs) {
    return `${owner ? `from host ${owner[1]}` : 'of no known process'}, untouched for ${Math.floor((nowMs - newestMs) / 3_600_000)} hours`;
  }
  return undefined;
}

/** Whether a process of this host runs under `pid`. EPERM: it does, as another user. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

async function removeLeftovers(root: string, logger: Logger, staleAfterMs: number): Promise<void> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch (error) {
    logger.warn({ err: error, path: root }, `could not list ${root} for leftovers of killed processes; they stay until a later start`);
    return;
  }
  const now = Date.now();
  for (const name of names) {
    const path = join(root, name);
    if (openHere.has(path)) continue;
    let size: { bytes: number; newestMs: number };
    try {
      size = await measure(path);
    } catch (error) {
      // Removed meanwhile by another process starting on this host.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      logger.warn({ err: error, path }, `could not inspect ${path} in the spool directory; remove it by hand if its process is gone`);
      continue;
    }
    const reason = leftoverReason(name, size.newestMs, now, staleAfterMs);
    if (reason === undefined) continue;
    try {
      await rm(path, { recursive: true, force: true });
      logger.warn({ path, bytes: size.bytes }, `removed ${path} (${size.bytes} bytes of spooled downloads), ${reason}`);
    } catch (error) {
      logger.warn({ err: error, path, bytes: size.bytes }, `could not remove ${path} (${size.bytes} bytes), ${reason}: remove it by hand`);
    }
  }
}

/** Bytes under `path` and the newest change in it (a body being written keeps a directory young). */
async function measure(path: string): Promise<{ bytes: number; newestMs: number }> {
  const stat = await lstat(path);
  let bytes = stat.isFile() ? stat.size : 0;
  let newestMs = stat.mtimeMs;
  if (stat.isDirectory()) {
    for (const name of await readdir(path)) {
      try {
        const inner = await measure(join(path, name));
        bytes += inner.bytes;
        newestMs = Math.max(newestMs, inner.newestMs);
      } catch (error) {
        // A body its live owner disposed of meanwhile.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
  return { bytes, newestMs };
}

/**
 * Trouble making the root or the process's directory at start: `LOCAL_STORAGE`, which stops the
 * command with exit 2 at start (the machine is set up wrong), naming TMPDIR.
 */
function openError(error: unknown, parent: string, root: string): SyncError {
  if (error instanceof SyncError) return error;
  const code = String((error as { code?: unknown }).code ?? '');
  if (code === 'ENOSPC' || code === 'EDQUOT') return spoolStorageError(error, root);
  const reason = OPEN_TROUBLE[code] ?? (error instanceof Error ? error.message : String(error));
  return new SyncError(
    'LOCAL_STORAGE',
    `the temporary directory ${parent} cannot hold downloads (${reason}${code ? `, ${code}` : ''}): set TMPDIR to an existing directory this user can write, ` +
      'where bodies larger than limits.spoolMemoryBytes are spooled',
    { cause: error },
  );
}

const OPEN_TROUBLE: Record<string, string> = {
  ENOENT: 'it does not exist',
  ENOTDIR: 'it is not a directory',
  EACCES: 'not writable: permission denied',
  EPERM: 'not writable: operation not permitted',
  EROFS: 'not writable: read-only file system',
};
