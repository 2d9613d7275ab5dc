import { FileFormatError } from '../errors/sync-error.js';

const COMMA = 0x2c;
const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;
const BOM = 0xfeff;

/** Where the splitter is between two characters (numbers, not strings: the switch runs per cell). */
const State = {
  /** At the start of a cell (or of a record). */
  FieldStart: 0,
  /** Inside a cell that did not start with a quote. */
  Unquoted: 1,
  /** Inside a quoted cell. */
  Quoted: 2,
  /** Just after a quote inside a quoted cell: a second quote, or the cell's end. */
  QuoteInQuoted: 3,
  /** Just after a carriage return that ended a record: a line feed after it belongs to it. */
  AfterCr: 4,
} as const;
type State = (typeof State)[keyof typeof State];

/**
 * Splits RFC 4180 CSV into records of cells, a chunk at a time (records may straddle chunks).
 * Records end at LF, CRLF or a lone CR; a leading BOM is dropped; cells are kept as they are.
 * Strict where a lenient reader would guess: a stray or unclosed quote fails with {@link FileFormatError}.
 */
export class CsvRecordSplitter {
  readonly #label: string;
  readonly #maxRecordLength: number;
  /** Characters of the current record in earlier chunks. */
  #recordLength = 0;
  /** Where the current record starts in the chunk being read (0 when it began in an earlier one). */
  #recordStart = 0;
  /** The line the current record starts on. */
  #recordLine = 1;
  #state: State = State.FieldStart;
  #cells: string[] = [];
  /** The current cell's text from earlier chunks (or, quoted, before its last doubled quote). */
  #partial = '';
  /** The physical line the next character is on, counting line feeds (for errors). */
  #line = 1;
  /** The line the open quoted cell started on. */
  #quoteLine = 1;
  #started = false;

  /**
   * `label` names the file in errors; a record longer than `maxRecordLength` characters fails
   * before it is held whole (`limits.maxRecordBytes`).
   */
  constructor(label: string, maxRecordLength = Number.POSITIVE_INFINITY) {
    this.#label = label;
    this.#maxRecordLength = maxRecordLength;
  }

  /** Reads one chunk of text; the records it completes are appended to `records`. */
  push(text: string, records: string[][]): void {
    let i = 0;
    const n = text.length;
    if (!this.#started && n > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === BOM) i = 1;
    }
    this.#recordStart = i;
    while (i < n) {
      switch (this.#state) {
        case State.FieldStart:
          if (text.charCodeAt(i) === QUOTE) {
            this.#state = State.Quoted;
            this.#quoteLine = this.#line;
            i += 1;
          } else {
            this.#state = State.Unquoted;
          }
          break;
        case State.Unquoted: {
          let j = i;
          let code = 0;
          // The hot loop: most cells are short and unquoted.
          for (; j < n; j += 1) {
            code = text.charCodeAt(j);
            if (code === COMMA || code === LF || code === CR || code === QUOTE) break;
          }
          if (j === n) {
            this.#partial += text.slice(i);
            i = n;
            break;
          }
          if (code === QUOTE) {
            throw this.#error(`a quote inside an unquoted cell (cell ${this.#cells.length + 1}); a cell holding a quote must be quoted, with the quote doubled`);
          }
          this.#cells.push(this.#partial === '' ? text.slice(i, j) : this.#partial + text.slice(i, j));
          this.#partial = '';
          i = this.#afterCell(code, j, records);
          break;
        }
        case State.Quoted: {
          const j = text.indexOf('"', i);
          const end = j < 0 ? n : j;
          const part = text.slice(i, end);
          this.#line += countLineFeeds(part);
          this.#partial += part;
          if (j < 0) {
            i = n;
          } else {
            this.#state = State.QuoteInQuoted;
            i = j + 1;
          }
          break;
        }
        case State.QuoteInQuoted: {
          const code = text.charCodeAt(i);
          if (code === QUOTE) {
            this.#partial += '"';
            this.#state = State.Quoted;
            i += 1;
            break;
          }
          if (code !== COMMA && code !== LF && code !== CR) {
            throw this.#error(`${JSON.stringify(text[i])} after the closing quote of cell ${this.#cells.length + 1}; expected a comma or the end of the line`);
          }
          this.#cells.push(this.#partial);
          this.#partial = '';
          i = this.#afterCell(code, i, records);
          break;
        }
        case State.AfterCr:
          if (text.charCodeAt(i) === LF) i += 1;
          this.#state = State.FieldStart;
          break;
      }
    }
    // Checked once per chunk and once per record, never per character: a record can outgrow the
    // limit by at most one chunk before it is refused.
    this.#recordLength += n - this.#recordStart;
    this.#recordStart = 0;
    if (this.#recordLength > this.#maxRecordLength) throw this.#tooLong();
  }

  /** Ends the text: the last record, if it has no line break after it, is appended to `records`. */
  end(records: string[][]): void {
    switch (this.#state) {
      case State.Quoted:
        throw this.#error(`quoted cell ${this.#cells.length + 1} is not closed before the end of the file`, this.#quoteLine);
      case State.Unquoted:
      case State.QuoteInQuoted:
        this.#cells.push(this.#partial);
        this.#partial = '';
        records.push(this.#cells);
        this.#cells = [];
        break;
      case State.FieldStart:
        // "a,b," at the very end: the comma opened one more, empty, cell.
        if (this.#cells.length > 0) {
          this.#cells.push('');
          records.push(this.#cells);
          this.#cells = [];
        }
        break;
      case State.AfterCr:
        break;
    }
    this.#state = State.FieldStart;
  }

  /** After a cell ended at `at` by `code` (a comma or a line break): the index to go on from. */
  #afterCell(code: number, at: number, records: string[][]): number {
    if (code === COMMA) {
      this.#state = State.FieldStart;
      return at + 1;
    }
    if (this.#recordLength + at - this.#recordStart > this.#maxRecordLength) throw this.#tooLong();
    records.push(this.#cells);
    this.#cells = [];
    this.#line += 1;
    this.#recordLength = 0;
    this.#recordStart = at + 1;
    this.#recordLine = this.#line;
    this.#state = code === CR ? State.AfterCr : State.FieldStart;
    return at + 1;
  }

  #tooLong(): FileFormatError {
    return new FileFormatError(
      `${this.#label} line ${this.#recordLine}: the record is longer than limits.maxRecordBytes (${this.#maxRecordLength} characters): ` +
        'refusing it before it is held whole; raise that setting if the file is genuine',
    );
  }

  #error(problem: string, line = this.#line): FileFormatError {
    return new FileFormatError(`${this.#label} is not valid CSV at line ${line}: ${problem}`);
  }
}

function countLineFeeds(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count += 1;
  return count;
}
