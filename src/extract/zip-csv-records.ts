import unzipper from 'unzipper';
import { ExportError, FileFormatError, SyncError } from '../errors.js';
import { readCsvRecords } from './csv-records.js';
import type { SourceRecord } from './source-record.js';

export interface ZipCsvRecordsOptions {
  /** Named in every error. */
  readonly fileName: string;
  /** The CSV may inflate to at most this many bytes (`limits.maxUncompressedBytes`). */
  readonly maxUncompressedBytes: number;
}

type ZipEntry = unzipper.File;

/**
 * Streams the records of the one CSV inside a ZIP export. The archive is read from its central
 * directory, not front to back, because ZIPs written by streaming writers (Java's
 * ZipOutputStream) put entry sizes in data descriptors after the data, which front-to-back
 * readers cannot handle. Nothing is extracted to disk, so entry names such as `../x.csv` are
 * harmless. The inflated size is bounded twice: by the size the archive declares, and by the
 * bytes actually inflated, since a zip bomb can lie about the first.
 */
export async function* readZipCsvRecords(
  zip: { readonly path: string } | { readonly buffer: Buffer },
  options: ZipCsvRecordsOptions,
): AsyncGenerator<SourceRecord> {
  const { fileName, maxUncompressedBytes } = options;
  let directory: unzipper.CentralDirectory;
  try {
    directory = 'path' in zip ? await unzipper.Open.file(zip.path) : await unzipper.Open.buffer(zip.buffer);
  } catch (error) {
    throw new FileFormatError(`${fileName} is not a readable ZIP archive: ${(error as Error).message}`, { cause: error });
  }

  const files = directory.files.filter((file) => file.type === 'File');
  const csvs = files.filter((file) => !file.path.startsWith('__MACOSX/') && file.path.toLowerCase().endsWith('.csv'));
  if (csvs.length !== 1) {
    const listed = files.length === 0 ? 'it has no entries' : `entries: ${files.map((file) => file.path).slice(0, 10).join(', ')}`;
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

  const inflated = entry.stream();
  try {
    yield* readCsvRecords(countInflated(inflated, entry, fileName, maxUncompressedBytes), { fileName, entryName });
  } catch (error) {
    if (error instanceof SyncError) throw error;
    throw new FileFormatError(`${fileName}, ${entryName}: cannot inflate the entry: ${(error as Error).message}`, { cause: error });
  } finally {
    inflated.destroy();
  }
}

async function* countInflated(
  inflated: AsyncIterable<Buffer>,
  entry: ZipEntry,
  fileName: string,
  limit: number,
): AsyncGenerator<Buffer> {
  let bytes = 0;
  for await (const chunk of inflated) {
    bytes += chunk.length;
    if (bytes > limit) throw tooLarge(fileName, entry.path, 'inflates past the limit', limit);
    yield chunk;
  }
}

function tooLarge(fileName: string, entryName: string, what: string, limit: number): ExportError {
  return new ExportError(
    'EXPORT_TOO_LARGE',
    `${fileName}, ${entryName} ${what}, over limits.maxUncompressedBytes (${limit} bytes): refusing it as a possible zip bomb; raise that setting if the file is genuine`,
  );
}
