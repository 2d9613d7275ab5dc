import { FileFormatError } from '../errors/sync-error.js';
import type { SpooledBody } from '../gateway/spooled-body.js';
import type { ExportFormat } from '../reports/report-types.js';
import { readCsvRecords } from './csv-records.js';
import { readJsonRecords, type SourceRecords } from './json-records.js';
import { readZipCsvRecords } from './zip-csv-records.js';

export interface OpenExportOptions {
  /** The name the records' errors use: the Content-Disposition name, or one made up for the slice. */
  readonly fileName: string;
  readonly contentType: string | undefined;
  readonly maxUncompressedBytes: number;
  readonly maxJsonDepth: number;
  /** `limits.maxRecordBytes`. */
  readonly maxRecordBytes: number;
}

/** A body's records, and the format they were found in. */
export type ExportContent =
  | {
      readonly kind: 'records';
      readonly format: ExportFormat;
      readonly records: SourceRecords;
      /** Set when the body is a ZIP: where it is, for a reader on another thread (see readZipRowsOnWorker). */
      readonly zip?: { readonly path: string } | { readonly buffer: Buffer };
    }
  /** Only whitespace: treated like the empty body the spec gives for no data. */
  | { readonly kind: 'blank' };

const ZIP_MAGIC = 0x504b; // "PK"

/**
 * Chooses the parser by what the body is, not by what was asked for: a ZIP is read as the
 * spec's ZIP-with-a-CSV, a JSON array as the JSON export, a bare CSV (if the content type says
 * so) as CSV. Anything else (typically an HTML error page sent with status 200) fails clearly.
 */
export async function openExportRecords(body: SpooledBody, options: OpenExportOptions): Promise<ExportContent> {
  const head = await body.head(512);
  let start = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  while (start < head.length && isJsonWhitespace(head[start]!)) start += 1;
  if (start >= head.length && body.bytes <= head.length) return { kind: 'blank' };

  const first = head[start];
  if (head.length >= 2 && head.readUInt16BE(0) === ZIP_MAGIC) {
    const zip = body.zipSource();
    // A generator: nothing is opened unless the records are read (a big ZIP may be read on a worker thread instead).
    const records = readZipCsvRecords(zip, { fileName: options.fileName, maxUncompressedBytes: options.maxUncompressedBytes, maxRecordBytes: options.maxRecordBytes });
    return { kind: 'records', format: 'csv', records, zip };
  }
  if (first === 0x5b /* [ */ || first === 0x7b /* { */) {
    return {
      kind: 'records',
      format: 'json',
      records: readJsonRecords(body.inMemory() ?? body.stream(), { fileName: options.fileName, maxDepth: options.maxJsonDepth, maxRecordBytes: options.maxRecordBytes }),
    };
  }
  if (first === 0x3c /* < */) {
    throw new FileFormatError(
      `${options.fileName} is an HTML or XML page (content type ${options.contentType ?? 'not given'}), not a report file: the gateway or a proxy in front of it answered 200 with an error page`,
    );
  }
  if (options.contentType && /csv/i.test(options.contentType)) {
    return { kind: 'records', format: 'csv', records: readCsvRecords(body.stream(), { fileName: options.fileName, maxRecordBytes: options.maxRecordBytes }) };
  }
  const preview = JSON.stringify(head.subarray(start, start + 24).toString('latin1'));
  throw new FileFormatError(`${options.fileName} is neither a ZIP archive nor a JSON array (it starts with ${preview}, content type ${options.contentType ?? 'not given'})`);
}

function isJsonWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}
