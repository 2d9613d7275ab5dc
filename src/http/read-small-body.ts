/**
 * Reads at most `limit` bytes of a body as text, so error pages and token answers can be quoted
 * without trusting their size. A body that fits is read to its end (undici then reuses the
 * connection); a longer one is abandoned at the limit, which destroys it and its connection:
 * draining an error page of unknown size (a 503 that never ends) could take forever.
 */
export async function readSmallBody(body: AsyncIterable<Buffer | string>, limit = 16 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let kept = 0;
  try {
    for await (const chunk of body) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      chunks.push(buffer.subarray(0, limit - kept));
      kept += Math.min(buffer.length, limit - kept);
      if (kept >= limit) break;
    }
  } catch {
    // A broken error body changes nothing about the error being reported.
  }
  return Buffer.concat(chunks).toString('utf8');
}
