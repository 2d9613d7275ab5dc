import type { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { FileFormatError } from '../errors/sync-error.js';

const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/**
 * The body with its Content-Encoding undone: proxies compress even unasked, and the file is the
 * same report. Size limits apply to decoded bytes, bounding a gzip bomb. An unknown encoding or a
 * body not matching it is `FILE_INVALID`; transfer errors pass through unchanged, so are retried.
 */
export function decodeContentEncoding(body: AsyncIterable<Buffer>, header: string | undefined, describe: string): AsyncIterable<Buffer> {
  const codings = (header ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length === 0) return body;
  const unknown = codings.find((coding) => !(coding in DECODERS));
  if (unknown !== undefined) {
    throw new FileFormatError(
      `${describe} came with Content-Encoding ${header}, which report-sync cannot decode; the gateway or a proxy in front of it should send the file as it is`,
    );
  }
  // Codings are listed in the order they were applied, so they are undone from the last.
  const decoders = codings.reverse().map((coding) => DECODERS[coding]!());
  return decoded(body, decoders, header!, describe);
}

async function* decoded(body: AsyncIterable<Buffer>, decoders: Transform[], header: string, describe: string): AsyncGenerator<Buffer> {
  let transferFailure: unknown;
  async function* source(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of body) yield chunk;
    } catch (error) {
      transferFailure = error;
      throw error;
    }
  }
  const output = decoders[decoders.length - 1]!;
  const piping = pipeline([source(), ...decoders] as unknown as [NodeJS.ReadableStream, ...NodeJS.ReadWriteStream[]]);
  piping.catch(() => {}); // read through `output` below, which fails the same way
  try {
    for await (const chunk of output) yield chunk as Buffer;
    await piping;
  } catch (error) {
    if (transferFailure !== undefined) throw transferFailure;
    throw new FileFormatError(`${describe} says Content-Encoding ${header}, but the body cannot be decoded (${(error as Error).message})`, { cause: error });
  } finally {
    for (const decoder of decoders) decoder.destroy();
  }
}
