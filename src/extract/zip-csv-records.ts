import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import unzipper from 'unzipper';
import { ExportError, FileFormatError, SyncError } from '../errors/sync-error.js';
import { readCsvRecords } from './csv-records.js';
import type { SourceRecord } from './source-record.js';

export interface ZipCsvRecordsOptions {
  /** Named in every error. */
  readonly fileName: string;
  /** The CSV may inflate to at most this many bytes (`limits.maxUncompressedBytes`). */
  readonly maxUncompressedBytes: number;
  /** Longest CSV record, in characters (`limits.maxRecordBytes`). @defaultValue 1048576 */
  readonly maxRecordBytes?: number;
}

type ZipEntry = unzipper.File;

/** Compression methods seen in the wild that unzipper cannot read (it would inflate them as deflate). */
const METHOD_NAMES: Record<number, string> = { 9: 'deflate64', 12: 'bzip2', 14: 'lzma', 93: 'zstd', 95: 'xz', 98: 'ppmd', 99: 'WinZip AES encryption' };

/**
 * Streams the one CSV inside a ZIP, read from the central directory because streaming writers (Java's
 * ZipOutputStream) put entry sizes after the data. Nothing is extracted, so `../x.csv` is harmless.
 * Inflated size is bounded by the declared size and by the bytes inflated: a zip bomb can lie.
 */
export async function* readZipCsvRecords(zip: { readonly path: string } | { readonly buffer: Buffer }, options: ZipCsvRecordsOptions): AsyncGenerator<SourceRecord> {
  // unzipper never closes the file streams it opens when a reader stops early (a bad row, a zip
  // bomb): each would hold a descriptor of the deleted spool file until the process ends. So the
  // file streams are opened here, and all closed when the records end, however they end. (One
  // generator, not two: each level of `yield*` costs every record another await.)
  const opened = new Set<Readable>();
  try {
    const { fileName, maxUncompressedBytes } = options;
    let directory: unzipper.CentralDirectory;
    try {
      directory = 'path' in zip ? await unzipper.Open.custom(fileSource(zip.path, opened)) : await unzipper.Open.buffer(zip.buffer);
    } catch (error) {
      throw new FileFormatError(`${fileName} is not a readable ZIP archive: ${(error as Error).message}`, { cause: error });
    }

    const files = directory.files.filter((file) => file.type === 'File');
    const csvs = files.filter((file) => !file.path.startsWith('__MACOSX/') && file.path.toLowerCase().endsWith('.csv'));
    if (csvs.length !== 1) {
      const listed =
        files.length === 0
          ? 'it has no entries'
          : `entries: ${files
              .map((file) => file.path)
              .slice(0, 10)
              .join(', ')}`;
      throw new FileFormatError(
        csvs.length === 0
          ? `${fileName} holds no CSV file (${listed}); expected exactly one`
          : `${fileName} holds ${csvs.length} CSV files (${csvs.map((file) => file.path).join(', ')}); expected exactly one`,
      );
    }
    const entry = csvs[0]!;
    const entryName = entry.path;
    if (entry.uncompressedSize > maxUncompressedBytes) {
      throw tooLarge(fileName, entryName, `declares ${entry.uncompressedSize} bytes`, maxUncompressedBytes);
    }
    if (entry.flags & 0x01 || entry.compressionMethod === 99) {
      throw new FileFormatError(`${fileName}, ${entryName} is encrypted; report-sync reads only unencrypted exports: ask the service for a plain one`);
    }
    if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
      const method = `${entry.compressionMethod}${METHOD_NAMES[entry.compressionMethod] ? ` (${METHOD_NAMES[entry.compressionMethod]})` : ''}`;
      throw new FileFormatError(`${fileName}, ${entryName} is compressed with method ${method}; only stored and deflate entries can be read: ask the service for a standard ZIP`);
    }

    const inflated = entry.stream();
    try {
      yield* readCsvRecords(countInflated(inflated, entry, fileName, maxUncompressedBytes), { fileName, entryName, maxRecordBytes: options.maxRecordBytes });
    } catch (error) {
      if (error instanceof SyncError) throw error;
      throw new FileFormatError(`${fileName}, ${entryName}: cannot inflate the entry: ${(error as Error).message}`, { cause: error });
    } finally {
      inflated.destroy();
    }
  } finally {
    for (const stream of opened) stream.destroy();
  }
}

/** A ZIP file as unzipper reads it (as its own `Open.file` does), keeping every stream it opens. */
function fileSource(path: string, opened: Set<Readable>) {
  return {
    size: async () => (await stat(path)).size,
    stream: (start: number, length: number): Readable => {
      const stream = createReadStream(path, { start, end: length ? start + length : undefined });
      opened.add(stream);
      stream.once('close', () => opened.delete(stream));
      return stream;
    },
  };
}

/**
 * The inflated bytes, checked as they come: never more than the limit or the declared size (which
 * stops a lying zip bomb early), and at the end exactly the declared size and CRC-32, which
 * unzipper does not check: a corrupt entry could otherwise load plausible but wrong rows.
 */
async function* countInflated(inflated: AsyncIterable<Buffer>, entry: ZipEntry, fileName: string, limit: number): AsyncGenerator<Buffer> {
  const declared = entry.uncompressedSize;
  let bytes = 0;
  let crc = 0;
  for await (const chunk of inflated) {
    bytes += chunk.length;
    if (bytes > limit) throw tooLarge(fileName, entry.path, 'inflates past the limit', limit);
    if (bytes > declared) {
      throw new ExportError(
        'EXPORT_TOO_LARGE',
        `${fileName}, ${entry.path} inflates to more than the ${declared} bytes it declares: refusing it as a possible zip bomb (or a corrupt archive)`,
      );
    }
    crc = crc32(chunk, crc);
    // Not UTF-8 is the CSV reader's to find: its decoder refuses such bytes, naming where.
    yield chunk;
  }
  if (bytes !== declared) {
    throw new FileFormatError(`${fileName}, ${entry.path} is corrupt: it inflates to ${bytes} bytes, not the ${declared} it declares`);
  }
  if (crc >>> 0 !== entry.crc32 >>> 0) {
    throw new FileFormatError(`${fileName}, ${entry.path} is corrupt: its CRC-32 does not match its content; ask for the export again`);
  }
}

function tooLarge(fileName: string, entryName: string, what: string, limit: number): ExportError {
  return new ExportError(
    'EXPORT_TOO_LARGE',
    `${fileName}, ${entryName} ${what}, over limits.maxUncompressedBytes (${limit} bytes): refusing it as a possible zip bomb; raise that setting if the file is genuine`,
  );
}
