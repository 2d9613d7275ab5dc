import type { Readable } from 'node:stream';

/**
 * Reads at most `limit` bytes of a body as text and discards the rest, so error pages and
 * token answers can be quoted without trusting their size. Always consumes the body, which
 * undici needs to reuse the connection.
 */
export async function readSmallBody(body: Readable, limit = 16 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let kept = 0;
  try {
    for await (const chunk of body) {
      const buffer = chunk as Buffer;
      if (kept < limit) {
        chunks.push(buffer.subarray(0, limit - kept));
        kept += Math.min(buffer.length, limit - kept);
      }
    }
  } catch {
    // A broken error body changes nothing about the error being reported.
  }
  return Buffer.concat(chunks).toString('utf8');
}
