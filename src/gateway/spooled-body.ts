import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ExportError } from '../errors/sync-error.js';
import type { SpoolDirectory } from './spool-directory.js';
import { spoolStorageError } from './spool-storage-error.js';

export interface SpoolOptions {
  /** Bodies up to this many bytes stay in memory; a larger one moves to a temporary file. */
  readonly memoryLimit: number;
  /** More bytes than this fails the download with `EXPORT_TOO_LARGE`. */
  readonly maxBytes: number;
  /**
   * The process's spool directory, where a body over `memoryLimit` gets a directory of its own;
   * leftovers of a killed process are removed when the next one opens it.
   * @defaultValue a `report-sync-*` directory directly under os.tmpdir(), which a killed process leaves behind
   */
  readonly spool?: SpoolDirectory;
}

/**
 * A downloaded body held whole before parsing, so a cut transfer is retried before anything is
 * written and ZIPs can be read from their central directory. Small bodies stay in memory, large
 * ones on disk; `sha256` and `bytes` are computed on the way in. The owner must call `dispose()`.
 */
export class SpooledBody {
  readonly bytes: number;
  readonly sha256: string;
  readonly #buffer: Buffer | undefined;
  readonly #file: string | undefined;
  readonly #dir: string | undefined;

  /** `held`: the body in memory (`buffer`), or spooled to `file` inside the directory `dir`. */
  private constructor(bytes: number, sha256: string, held: { readonly buffer?: Buffer; readonly file?: string; readonly dir?: string }) {
    this.bytes = bytes;
    this.sha256 = sha256;
    this.#buffer = held.buffer;
    this.#file = held.file;
    this.#dir = held.dir;
  }

  /**
   * Reads `source` to its end. Destroys nothing it was not given; on error, removes what it wrote.
   * The source's own errors pass through as they are; trouble writing the spool file is
   * `LOCAL_STORAGE` (see {@link spoolStorageError}).
   */
  static async from(source: AsyncIterable<Buffer>, options: SpoolOptions): Promise<SpooledBody> {
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    let bytes = 0;
    let dir: string | undefined;
    let file: string | undefined;
    let out: WriteStream | undefined;
    const spoolPath = options.spool?.path ?? tmpdir();
    // Only the disk's trouble is mapped: an error of the source (a reset, a timeout) keeps its class.
    const onDisk = async <T>(work: () => Promise<T>): Promise<T> => {
      try {
        return await work();
      } catch (error) {
        throw spoolStorageError(error, spoolPath);
      }
    };
    try {
      for await (const chunk of source) {
        bytes += chunk.length;
        if (bytes > options.maxBytes) {
          throw new ExportError('EXPORT_TOO_LARGE', `the export body passed limits.maxDownloadBytes (${options.maxBytes} bytes); raise that setting if the file is genuine`);
        }
        hash.update(chunk);
        if (out) {
          const spooling = out;
          await onDisk(() => spoolWrite(spooling, chunk));
          continue;
        }
        chunks.push(chunk);
        if (bytes > options.memoryLimit) {
          const { spool } = options;
          dir = await onDisk(() => (spool ? spool.makeBodyDirectory() : mkdtemp(join(tmpdir(), 'report-sync-'))));
          file = join(dir, 'export.body');
          const spooling = createWriteStream(file, { flags: 'wx', mode: 0o600 });
          out = spooling;
          // Errors are read from `errored`, at the next write or at the end; without a listener,
          // one arriving between writes would crash the process.
          spooling.on('error', () => {});
          for (const held of chunks.splice(0)) await onDisk(() => spoolWrite(spooling, held));
        }
      }
      if (out) {
        const spooling = out;
        await onDisk(async () => {
          spooling.end();
          await finished(spooling);
        });
      }
    } catch (error) {
      out?.destroy();
      if (dir) await rm(dir, { recursive: true, force: true });
      throw error;
    }
    const digest = hash.digest('hex');
    return new SpooledBody(bytes, digest, out ? { file, dir } : { buffer: Buffer.concat(chunks, bytes) });
  }

  /** The first `count` bytes, for telling a ZIP from JSON from an HTML error page. */
  async head(count: number): Promise<Buffer> {
    if (this.#buffer) return this.#buffer.subarray(0, count);
    const stream = createReadStream(this.#file!, { start: 0, end: Math.max(0, count - 1) });
    const parts: Buffer[] = [];
    for await (const part of stream) parts.push(part as Buffer);
    return Buffer.concat(parts);
  }

  /** The whole body, when it is held in memory (not spooled to a file): parsers can skip the stream. */
  inMemory(): Buffer | undefined {
    return this.#buffer;
  }

  /** A fresh stream of the whole body. */
  stream(): Readable {
    return this.#buffer ? Readable.from([this.#buffer]) : createReadStream(this.#file!, { highWaterMark: 256 * 1024 });
  }

  /** Where a ZIP reader can find the body: a file path, or the bytes themselves. */
  zipSource(): { path: string } | { buffer: Buffer } {
    return this.#buffer ? { buffer: this.#buffer } : { path: this.#file! };
  }

  async dispose(): Promise<void> {
    if (this.#dir) await rm(this.#dir, { recursive: true, force: true });
  }
}

/** Writes a chunk, waiting while the file is behind; rejects with the file's error (ENOSPC…). */
async function spoolWrite(out: WriteStream, chunk: Buffer): Promise<void> {
  if (out.errored) throw out.errored;
  // `once` rejects on an 'error' event; `errored` above covers one emitted before it listens.
  if (!out.write(chunk)) await once(out, 'drain');
}
