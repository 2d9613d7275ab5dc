import { FileFormatError } from '../errors/sync-error.js';
import { printableText } from '../text/printable-text.js';
import { DEFAULT_MAX_RECORD_BYTES } from './default-max-record-bytes.js';
import { parseJsonRecord } from './parse-json-record.js';
import { objectRecord, type SourceRecord } from './source-record.js';

export interface JsonRecordsOptions {
  /** Named in every error. */
  readonly fileName: string;
  /** Deepest nesting accepted inside a record. @defaultValue 64 */
  readonly maxDepth?: number;
  /** Longest record, in characters (`limits.maxRecordBytes`). @defaultValue 1048576 */
  readonly maxRecordBytes?: number;
}

enum Phase {
  /** Before the opening `[`. */
  Start,
  /** After `[` or `,`: a record (or, right after `[`, the closing `]`) comes next. */
  BeforeRecord,
  /** After a record: `,` or `]` comes next. */
  AfterRecord,
  InRecord,
  /** After the closing `]`: only whitespace may follow. */
  Done,
}

/**
 * Files up to this size, when they are already in memory, are parsed in one piece: for small
 * files the scanner and the per-record parse cost more than the records themselves. The parsed
 * records of a file this size take a few MiB at most.
 */
const AT_ONCE_MAX_BYTES = 256 * 1024;

/** Deepest nesting accepted inside a record, unless told. */
const DEFAULT_MAX_DEPTH = 64;

/** Most characters scanned before the records they complete are handed on. */
const PIECE_CHARS = 64 * 1024;

/** Records as a parser hands them on: at once (a small file in memory) or as they stream in. */
export type SourceRecords = Iterable<SourceRecord> | AsyncIterable<SourceRecord>;

/**
 * The records of a JSON export (a top-level array of objects); numbers arrive as `LosslessNumber`s.
 * A file held in memory is read without a promise per record on its way to the warehouse; a
 * stream's records come as they arrive. Nothing is parsed until the first record is asked for: a
 * slice waiting for the warehouse holds its file's bytes, not the objects they become, which
 * would outlive V8's young generation and be copied into the old one, there to be collected later
 * at a higher price.
 */
export function readJsonRecords(input: AsyncIterable<Buffer | string> | Buffer, options: JsonRecordsOptions): SourceRecords {
  return Buffer.isBuffer(input) ? wholeJsonRecords(input, options) : streamJsonRecords(input, options);
}

/**
 * A file in memory: parsed in one piece when it is small (for small files the scanner and the
 * per-record parse cost more than the records themselves); anything else, or anything unusual in
 * a small one, goes through the scanner, which holds only the current record's text, so errors
 * name the record as for a stream.
 */
function* wholeJsonRecords(whole: Buffer, options: JsonRecordsOptions): Generator<SourceRecord> {
  // A file no longer than the longest record allowed cannot hold a record that is too long.
  const atOnce = whole.length <= Math.min(AT_ONCE_MAX_BYTES, options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
  const records = atOnce ? parseAtOnce(whole, options.maxDepth ?? DEFAULT_MAX_DEPTH) : undefined;
  if (records !== undefined) {
    for (let i = 0; i < records.length; i += 1) yield objectRecord(`record ${i + 1}`, records[i]!);
    return;
  }
  const scanner = jsonRecordScanner(options);
  yield* scanner.push(whole);
  yield* scanner.end();
}

/** A stream's records, as its chunks arrive. */
async function* streamJsonRecords(input: AsyncIterable<Buffer | string>, options: JsonRecordsOptions): AsyncGenerator<SourceRecord> {
  const scanner = jsonRecordScanner(options);
  for await (const chunk of input) yield* scanner.push(chunk);
  yield* scanner.end();
}

/** The scanner over one file's text: its chunks pushed in order, then its end. */
interface JsonRecordScanner {
  /** The records the chunk completes. */
  push(chunk: Buffer | string): Generator<SourceRecord>;
  /** The last records, then what is wrong with how the file ends, if anything. */
  end(): Generator<SourceRecord>;
}

/** The scanner of {@link readJsonRecords}: a record's text is found by its brackets, then parsed alone. */
function jsonRecordScanner(options: JsonRecordsOptions): JsonRecordScanner {
  const { fileName } = options;
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const fail = (problem: string): never => {
    throw new FileFormatError(`${fileName}: ${problem}`);
  };
  const tooLong = (): never =>
    fail(
      `record ${recordNumber} is longer than limits.maxRecordBytes (${maxRecordBytes} characters): refusing it before it is held whole; raise that setting if the file is genuine`,
    );

  let phase = Phase.Start;
  let afterComma = false;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let carry = '';
  let recordNumber = 0;
  let atFileStart = true;
  const complete: string[] = [];

  const scan = (text: string): void => {
    let recordStart = phase === Phase.InRecord ? 0 : -1;
    for (let i = 0; i < text.length; i += 1) {
      const c = text.charCodeAt(i);
      if (phase === Phase.InRecord) {
        if (inString || c === 0x22 /* " */) {
          // Most of a record is inside strings: jump to the closing quote rather than test each character.
          let from = inString ? i : i + 1;
          if (escaped) {
            escaped = false;
            from += 1;
          }
          i = closingQuote(text, from);
          inString = i < 0;
          if (inString) {
            escaped = endsInEscape(text, from);
            i = text.length;
          }
          continue;
        }
        if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
          depth += 1;
          if (depth > maxDepth) fail(`record ${recordNumber} is nested deeper than ${maxDepth} levels (limits.maxJsonDepth)`);
        } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
          depth -= 1;
          if (depth === 0) {
            if (carry.length + i + 1 - recordStart > maxRecordBytes) tooLong();
            complete.push(carry + text.slice(recordStart, i + 1));
            carry = '';
            recordStart = -1;
            phase = Phase.AfterRecord;
          }
        }
        continue;
      }
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
      switch (phase) {
        case Phase.Start:
          if (c !== 0x5b) fail(`the file is ${describeValueStart(text, i)}, not an array of records`);
          phase = Phase.BeforeRecord;
          break;
        case Phase.BeforeRecord:
          if (c === 0x5d && !afterComma) {
            phase = Phase.Done;
            break;
          }
          recordNumber += 1;
          if (c !== 0x7b) fail(`record ${recordNumber} is ${describeValueStart(text, i)}, not an object`);
          phase = Phase.InRecord;
          depth = 1;
          recordStart = i;
          afterComma = false;
          break;
        case Phase.AfterRecord:
          if (c === 0x2c /* , */) {
            phase = Phase.BeforeRecord;
            afterComma = true;
          } else if (c === 0x5d) phase = Phase.Done;
          else fail(`expected "," or "]" after record ${recordNumber}, found ${JSON.stringify(text[i])}`);
          break;
        case Phase.Done:
          fail(`unexpected ${JSON.stringify(text.slice(i, i + 20))} after the closing "]" of the array`);
      }
    }
    if (phase === Phase.InRecord && recordStart >= 0) {
      if (carry.length + text.length - recordStart > maxRecordBytes) tooLong();
      carry += text.slice(recordStart);
    }
  };

  const parseRecord = (text: string, number: number): SourceRecord => {
    let values: unknown;
    try {
      values = parseJsonRecord(text);
    } catch (error) {
      // The parser's message may quote the record (a duplicate key, a number): cut, as the record can be long.
      fail(`record ${number} is not valid JSON: ${printableText((error as Error).message)}`);
    }
    return objectRecord(`record ${number}`, values as Record<string, unknown>);
  };

  const decode = (chunk: Buffer | string, stream: boolean): string => {
    let text: string;
    try {
      text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream });
    } catch {
      return fail(`is not valid UTF-8 text (after record ${recordNumber})`);
    }
    if (atFileStart && text.length > 0) {
      atFileStart = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    return text;
  };

  let firstNumber = 1;
  const drain = function* (): Generator<SourceRecord> {
    for (let k = 0; k < complete.length; k += 1) yield parseRecord(complete[k]!, firstNumber + k);
    firstNumber += complete.length;
    complete.length = 0;
  };

  return {
    *push(chunk) {
      // In pieces: a chunk can be a whole body held in memory, and the records one scan completes
      // (a million `{}`) are all held until they are drained.
      const text = decode(chunk, true);
      for (let at = 0; at < text.length; at += PIECE_CHARS) {
        scan(at === 0 && text.length <= PIECE_CHARS ? text : text.slice(at, at + PIECE_CHARS));
        yield* drain();
      }
    },
    *end() {
      scan(decode(Buffer.alloc(0), false));
      yield* drain();
      if (phase === Phase.Start) return; // empty or whitespace-only: nothing in it
      if (phase === Phase.InRecord) fail(`the file ends inside record ${recordNumber}: it was cut short`);
      if (phase !== Phase.Done) fail(`the file ends before the closing "]" of the array (after record ${recordNumber}): it was cut short`);
    },
  };
}

/**
 * The records of a whole JSON file, or undefined when it is anything but a well-formed array of
 * objects nested at most `maxDepth` deep inside it (then the scanner reads it and says what is wrong).
 */
function parseAtOnce(bytes: Buffer, maxDepth: number): Record<string, unknown>[] | undefined {
  let value: unknown;
  try {
    // The decoder drops a leading BOM, as the streaming decoder does.
    value = parseJsonRecord(new TextDecoder('utf-8', { fatal: true }).decode(bytes), maxDepth + 1);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value)) return undefined;
  // A record is a plain object as JSON.parse makes it (a number is a LosslessNumber object by now).
  for (const record of value) if (record === null || typeof record !== 'object' || Object.getPrototypeOf(record) !== Object.prototype) return undefined;
  return value as Record<string, unknown>[];
}

/**
 * Where the string that goes on at `from` ends: the next quote not escaped by a backslash, or -1
 * when the text ends first. Backslashes before `from` were dealt with by the caller.
 */
function closingQuote(text: string, from: number): number {
  for (let quote = text.indexOf('"', from); quote >= 0; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    for (let k = quote - 1; k >= from && text.charCodeAt(k) === 0x5c; k -= 1) backslashes += 1;
    if (backslashes % 2 === 0) return quote;
  }
  return -1;
}

/** True when the text (from `from` on, inside a string) ends with an odd run of backslashes: the next character is escaped. */
function endsInEscape(text: string, from: number): boolean {
  let backslashes = 0;
  for (let k = text.length - 1; k >= from && text.charCodeAt(k) === 0x5c; k -= 1) backslashes += 1;
  return backslashes % 2 === 1;
}

function describeValueStart(text: string, at: number): string {
  const c = text[at];
  if (c === '{') return 'an object';
  if (c === '"') return 'a string';
  if (c === '[') return 'an array';
  if (c === 't' || c === 'f') return 'a boolean';
  if (c === 'n') return 'null';
  if (c === '<') return 'an HTML or XML page';
  if (c !== undefined && /[-\d]/.test(c)) return 'a number';
  return `text starting ${JSON.stringify(text.slice(at, at + 20))}`;
}
