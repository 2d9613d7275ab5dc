/**
 * Reads at most `limit` bytes of a body as text, to quote error pages without trusting their size.
 * A body that fits is read to its end, so undici reuses the connection; a longer one is abandoned
 * at the limit, destroying the connection, since an error page may never end.
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
