import { parse } from 'csv-parse';
import { Readable } from 'node:stream';
import { FileFormatError } from '../errors.js';
import type { SourceRecord } from './source-record.js';

export interface CsvRecordsOptions {
  /** Named in every error. */
  readonly fileName: string;
  /** The ZIP entry the CSV came from, named in `where` and errors. */
  readonly entryName?: string;
}

/**
 * Streams the records of a CSV whose first row is the header: values keyed by header cell,
 * `where` naming the physical line the record starts on. Handles a BOM, CRLF or LF, quoted
 * fields with commas, doubled quotes and line breaks, and blank lines. A row with another
 * number of cells than the header fails, naming its line.
 */
export async function* readCsvRecords(input: AsyncIterable<Buffer | string> | Readable, options: CsvRecordsOptions): AsyncGenerator<SourceRecord> {
  const label = options.entryName ? `${options.fileName}, ${options.entryName}` : options.fileName;
  const wherePrefix = options.entryName ? `${options.entryName} line ` : 'line ';
  const source = input instanceof Readable ? input : Readable.from(input, { objectMode: false });
  // No `skip_empty_lines` and no `info`: csv-parse's per-record info object costs more than the
  // rest of the parsing, so lines are counted here (one per record, plus the line breaks kept
  // inside quoted values), and blank lines, which csv-parse then hands on as one empty cell, are
  // skipped here (csv-parse's own line counter also miscounts CRLF inside quoted fields).
  const parser = source.pipe(parse({ bom: true, relax_column_count: true }));
  // Node does not pass a source's error down a pipe: forward it, or the loop would wait forever.
  source.once('error', (error) => parser.destroy(error));
  // The parser's error is read from `parser.errored` by nextBatch (thrown from the loop below); it
  // may come while no batch is awaited, when it would otherwise be an uncaught 'error' event.
  parser.on('error', () => {});

  let header: string[] | undefined;
  let nextLine = 1;
  try {
    for (let batch = await nextBatch(parser); batch !== null; batch = await nextBatch(parser))
      for (const record of batch) {
        const line = nextLine;
        nextLine += 1;
        for (let i = 0; i < record.length; i += 1) if (record[i]!.includes('\n')) nextLine += countNewlines(record[i]!);
        if (record.length === 1 && record[0] === '') continue;

        if (header === undefined) {
          header = readHeader(record, label, line);
          continue;
        }
        if (record.length !== header.length) {
          throw new FileFormatError(`${label} line ${line}: expected ${header.length} columns (as in the header), found ${record.length}`);
        }
        const values: Record<string, string> = {};
        for (let i = 0; i < header.length; i += 1) values[header[i]!] = record[i]!;
        yield { where: `${wherePrefix}${line}`, values };
      }
  } catch (error) {
    if (error instanceof FileFormatError) throw error;
    const err = error as Error & { code?: string; lines?: number };
    if (typeof err.code === 'string' && err.code.startsWith('CSV_')) {
      throw new FileFormatError(`${label} is not valid CSV near line ${err.lines ?? nextLine}: ${err.message}`, { cause: err });
    }
    throw error;
  } finally {
    parser.destroy();
    source.destroy();
  }
}

/**
 * The records the parser holds now, waiting for some if it holds none; `null` once it has ended.
 * Read this way rather than with `for await` over the stream, which costs an await per record
 * where this costs one per batch; the parser's error, if it fails, is thrown.
 */
async function nextBatch(parser: Readable): Promise<string[][] | null> {
  for (;;) {
    if (parser.errored) throw parser.errored;
    const batch: string[][] = [];
    for (let record = parser.read() as string[] | null; record !== null; record = parser.read() as string[] | null) batch.push(record);
    if (batch.length > 0) return batch;
    if (parser.errored) throw parser.errored;
    if (parser.readableEnded || parser.destroyed) return null;
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        parser.off('readable', done).off('end', done).off('close', done).off('error', failed);
        resolve();
      };
      const failed = (error: Error) => {
        parser.off('readable', done).off('end', done).off('close', done).off('error', failed);
        reject(error);
      };
      parser.once('readable', done).once('end', done).once('close', done).once('error', failed);
    });
  }
}

function readHeader(record: string[], label: string, line: number): string[] {
  const header = record.map((cell) => cell.trim());
  const seen = new Set<string>();
  header.forEach((cell, index) => {
    if (cell === '') throw new FileFormatError(`${label} line ${line}: header cell ${index + 1} is empty; every column needs a name`);
    if (seen.has(cell)) throw new FileFormatError(`${label} line ${line}: the header names column "${cell}" twice`);
    seen.add(cell);
  });
  return header;
}

function countNewlines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count += 1;
  return count;
}
