import type { Readable } from 'node:stream';
import { FileFormatError } from '../errors/sync-error.js';
import { printableText } from '../text/printable-text.js';
import { CsvRecordSplitter } from './csv-record-splitter.js';
import { DEFAULT_MAX_RECORD_BYTES } from './default-max-record-bytes.js';
import type { SourceRecord } from './source-record.js';

export interface CsvRecordsOptions {
  /** Named in every error. */
  readonly fileName: string;
  /** The ZIP entry the CSV came from, named in `where` and errors. */
  readonly entryName?: string;
  /** Longest record, in characters (`limits.maxRecordBytes`). @defaultValue 1048576 */
  readonly maxRecordBytes?: number;
}

/**
 * Streams the records of a CSV whose first row is the header; `where` names the physical line a
 * record starts on. Handles a BOM, CRLF or LF, quoted commas, doubled quotes, line breaks and blank
 * lines. A row whose cell count differs from the header's fails, naming its line.
 */
export async function* readCsvRecords(input: AsyncIterable<Buffer | string> | Readable, options: CsvRecordsOptions): AsyncGenerator<SourceRecord> {
  const label = options.entryName ? `${options.fileName}, ${options.entryName}` : options.fileName;
  const wherePrefix = options.entryName ? `${options.entryName} line ` : 'line ';
  const splitter = new CsvRecordSplitter(label, options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
  // Fatal: bytes that are not UTF-8 fail the file rather than load as U+FFFD ("Soci�t�" for a Latin-1 "Société").
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let decodedBytes = 0;
  // The last bytes before this chunk: a character may have begun there, waiting in the decoder.
  let tail = Buffer.alloc(0);
  const decode = (chunk: Buffer | string, stream: boolean): string => {
    if (typeof chunk === 'string') return chunk;
    try {
      const text = decoder.decode(chunk, { stream });
      decodedBytes += chunk.length;
      tail = Buffer.from((chunk.length >= 3 ? chunk : Buffer.concat([tail, chunk])).subarray(-3));
      return text;
    } catch (error) {
      const after = decodedBytes - tail.length + validPrefixLength(Buffer.concat([tail, chunk]));
      throw new FileFormatError(`${label} is not UTF-8 text (an invalid byte after byte ${after} of the CSV; Latin-1 or Windows-1252, perhaps): ask for the export in UTF-8`, {
        cause: error,
      });
    }
  };
  // One await per piece of text, not per record. A chunk may be a whole body, so it is cut into
  // pieces to keep what one push holds small. Each piece goes to the splitter up to its last line
  // break, so a record's cells are built and typed at once and die young; what is held back is at
  // most `maxRecordBytes` (a longer record is pushed, and the splitter refuses it).
  const maxHeld = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  async function* batches(): AsyncGenerator<string[][]> {
    let records: string[][] = [];
    let held: string[] = [];
    let heldChars = 0;
    const pushHeld = () => {
      for (const part of held) splitter.push(part, records);
      held = [];
      heldChars = 0;
    };
    for await (const chunk of input as AsyncIterable<Buffer | string>) {
      // Bytes are decoded a piece at a time too: a string of a whole chunk would be a large object,
      // collected only with the old generation, and every piece sliced from it would keep it.
      for (let at = 0; at < chunk.length; at += PIECE_CHARS) {
        const part = chunk.length <= PIECE_CHARS ? chunk : typeof chunk === 'string' ? chunk.slice(at, at + PIECE_CHARS) : chunk.subarray(at, at + PIECE_CHARS);
        const piece = decode(part, true);
        const end = Math.max(piece.lastIndexOf('\n'), piece.lastIndexOf('\r')) + 1;
        if (end === 0) {
          held.push(piece);
          heldChars += piece.length;
          if (heldChars > maxHeld) pushHeld();
        } else {
          pushHeld();
          splitter.push(end === piece.length ? piece : piece.slice(0, end), records);
          if (end < piece.length) {
            held.push(piece.slice(end));
            heldChars = piece.length - end;
          }
        }
        if (records.length > 0) {
          yield records;
          records = [];
        }
      }
    }
    pushHeld();
    splitter.push(decode(Buffer.alloc(0), false), records);
    splitter.end(records);
    if (records.length > 0) yield records;
  }

  let header: string[] | undefined;
  let nextLine = 1;
  for await (const batch of batches())
    for (const record of batch) {
      const line = nextLine;
      nextLine += 1;
      for (let i = 0; i < record.length; i += 1) if (record[i]!.includes('\n')) nextLine += countNewlines(record[i]!);
      // A blank line.
      if (record.length === 1 && record[0] === '') continue;

      if (header === undefined) {
        header = readHeader(record, label, line);
        continue;
      }
      if (record.length !== header.length) {
        throw new FileFormatError(`${label} line ${line}: expected ${header.length} columns (as in the header), found ${record.length}`);
      }
      yield { where: `${wherePrefix}${line}`, names: header, values: record };
    }
}

/** Most characters handed to the splitter at once (see `batches`). */
const PIECE_CHARS = 64 * 1024;

function readHeader(record: string[], label: string, line: number): string[] {
  const header = record.map((cell) => cell.trim());
  const seen = new Set<string>();
  header.forEach((cell, index) => {
    if (cell === '') throw new FileFormatError(`${label} line ${line}: header cell ${index + 1} is empty; every column needs a name`);
    if (seen.has(cell)) throw new FileFormatError(`${label} line ${line}: the header names column "${printableText(cell, 80)}" twice`);
    seen.add(cell);
  });
  return header;
}

/**
 * How many bytes at the start of `chunk` are whole UTF-8 characters before its first invalid byte:
 * where that byte is (or, when `chunk` starts inside a character, a point before it). Only the
 * bytes that failed to decode are searched.
 */
function validPrefixLength(chunk: Buffer): number {
  const decodes = (length: number, stream: boolean) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(chunk.subarray(0, length), { stream });
      return true;
    } catch {
      return false;
    }
  };
  // A prefix read as a stream (a character cut at its end allowed) stays valid up to the first
  // invalid byte and never after: a binary search finds the longest.
  let low = 0;
  let high = chunk.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (decodes(middle, true)) low = middle;
    else high = middle - 1;
  }
  // Then back to the end of its last whole character (at most 3 bytes).
  while (low > 0 && !decodes(low, false)) low -= 1;
  return low;
}

function countNewlines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count += 1;
  return count;
}
