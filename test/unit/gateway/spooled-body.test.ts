import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SyncError } from '../../../src/errors/sync-error.js';
import { SpoolDirectory } from '../../../src/gateway/spool-directory.js';
import { SpooledBody } from '../../../src/gateway/spooled-body.js';
import { createLogger } from '../../../src/logging/logger.js';

const scratch = mkdtempSync(join(tmpdir(), 'report-sync-spooled-body-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const opened: SpoolDirectory[] = [];
afterEach(async () => {
  for (const spool of opened.splice(0)) await spool.close();
});

async function openSpool(): Promise<SpoolDirectory> {
  const spool = await SpoolDirectory.open({ parent: mkdtempSync(join(scratch, 'parent-')), logger: createLogger({ level: 'silent' }) });
  opened.push(spool);
  return spool;
}

/** `count` chunks of 16 KiB; before chunk `failAt`, runs `beforeChunk` (or throws `error`). */
async function* chunks(count: number, options: { failAt?: number; error?: Error; beforeChunk?: () => void } = {}): AsyncIterable<Buffer> {
  for (let i = 0; i < count; i += 1) {
    if (i === options.failAt) {
      if (options.error) throw options.error;
      options.beforeChunk?.();
    }
    yield Buffer.alloc(16 * 1024, i);
  }
}

const limits = { memoryLimit: 1024, maxBytes: 1 << 20 };

async function spoolError(promise: Promise<unknown>): Promise<SyncError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(SyncError);
  return error as SyncError;
}

describe('SpooledBody', () => {
  it('keeps a small body in memory and writes nothing', async () => {
    const spool = await openSpool();
    const body = await SpooledBody.from(chunks(1), { ...limits, memoryLimit: 1 << 20, spool });
    expect(body.inMemory()?.length).toBe(16 * 1024);
    expect(readdirSync(spool.path)).toEqual([]);
  });

  it('spools a larger body into the spool directory, and dispose() removes it', async () => {
    const spool = await openSpool();
    const body = await SpooledBody.from(chunks(8), { ...limits, spool });
    const source = body.zipSource();
    expect('path' in source && source.path.startsWith(`${spool.path}/`)).toBe(true);
    expect(body.bytes).toBe(8 * 16 * 1024);
    const expected = createHash('sha256');
    for await (const chunk of chunks(8)) expected.update(chunk);
    expect(body.sha256).toBe(expected.digest('hex'));
    await body.dispose();
    expect(readdirSync(spool.path)).toEqual([]);
  });

  it("passes the source's own errors through as they are, and removes what it wrote", async () => {
    const spool = await openSpool();
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    await expect(SpooledBody.from(chunks(8, { failAt: 4, error: reset }), { ...limits, spool })).rejects.toBe(reset);
    expect(readdirSync(spool.path)).toEqual([]);
  });

  it('fails as LOCAL_STORAGE (ENOTDIR), naming the directory, when the spool directory is a file', async () => {
    const spool = await openSpool();
    rmSync(spool.path, { recursive: true });
    writeFileSync(spool.path, 'not a directory');
    const error = await spoolError(SpooledBody.from(chunks(8), { ...limits, spool }));
    expect(error.code).toBe('LOCAL_STORAGE');
    expect(error.message).toContain(`cannot spool the downloaded body to ${spool.path}`);
    expect(error.message).toContain('ENOTDIR');
    rmSync(spool.path);
  });

  // Removed while the file is open, the data would still go to the unlinked file (Unix keeps it
  // until closed): the trouble shows when the body outgrows memory after its directory went.
  it('fails as LOCAL_STORAGE (ENOENT) when the temporary directory is removed during the download, and makes nothing', async () => {
    const spool = await openSpool();
    const parent = join(spool.path, '..', '..');
    const error = await spoolError(
      SpooledBody.from(chunks(8, { failAt: 1, beforeChunk: () => rmSync(parent, { recursive: true }) }), { ...limits, memoryLimit: 20 * 1024, spool }),
    );
    expect(error.code).toBe('LOCAL_STORAGE');
    expect(error.message).toContain(`cannot spool the downloaded body to ${spool.path}`);
    expect(error.message).toContain('ENOENT');
    expect(existsSync(parent)).toBe(false);
  });

  it('still refuses a body over maxBytes as EXPORT_TOO_LARGE', async () => {
    const spool = await openSpool();
    const error = await spoolError(SpooledBody.from(chunks(8), { ...limits, maxBytes: 64 * 1024, spool }));
    expect(error.code).toBe('EXPORT_TOO_LARGE');
    expect(readdirSync(spool.path)).toEqual([]);
  });
});
