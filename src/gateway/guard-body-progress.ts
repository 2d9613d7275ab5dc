import type { Readable } from 'node:stream';

/** Bytes a body must deliver within each `windowMs` for the transfer to count as moving. */
export const MIN_BODY_PROGRESS_BYTES = 16 * 1024;

/**
 * The chunks of `body`, ended with `stalled()` once `windowMs` passes with fewer than `minBytes`:
 * undici's `bodyTimeout` only measures silence between chunks, so a slow-loris server could hold a
 * slice forever. Breaking off the iteration destroys `body`, closing its connection.
 */
export async function* guardBodyProgress(body: Readable, windowMs: number, stalled: () => Error, minBytes: number = MIN_BODY_PROGRESS_BYTES): AsyncGenerator<Buffer> {
  let moved = 0;
  let failure: Error | undefined;
  const timer = setInterval(() => {
    if (moved < minBytes) {
      failure = stalled();
      body.destroy(failure);
    }
    moved = 0;
  }, windowMs);
  try {
    for await (const chunk of body) {
      moved += (chunk as Buffer).length;
      yield chunk as Buffer;
    }
  } catch (error) {
    throw failure ?? error;
  } finally {
    clearInterval(timer);
  }
}
