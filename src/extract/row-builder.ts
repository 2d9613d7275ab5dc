import { isLosslessNumber, stringify } from 'lossless-json';
import { FileFormatError } from '../errors/sync-error.js';
import { toColumnName } from './column-names.js';
import type { SourceRecord } from './source-record.js';
import { isIsoDate } from '../dates/is-iso-date.js';
import { printableText } from '../text/printable-text.js';
import type { Slice } from '../slice/slice.js';
import { toDecimalText } from '../reports/decimal-text.js';
import { decimalMisfit, POSTGRES_DECIMALS, type DecimalCapacity } from '../reports/decimal-capacity.js';
import type { ReportColumn, ReportDefinition } from '../reports/report-definition.js';

/** A row ready for a report table: slice columns, typed columns and `extra`. */
export type WarehouseRow = Record<string, string | number | null>;

/** Turns one source record into a row; `ordinal` is its 1-based position in the file. */
export type RowBuilder = (record: SourceRecord, ordinal: number) => WarehouseRow;

/** A row's values in the order of {@link rowColumns}: what the slice loader writes. */
export type RowValues = (string | number | null)[];

/** Turns one source record into a row's values, in the order of {@link rowColumns}. */
export type RowValuesBuilder = (record: SourceRecord, ordinal: number) => RowValues;

/** The columns of the definition's rows, in table order: slice columns, typed columns, `extra`. */
export function rowColumns(definition: ReportDefinition): string[] {
  return [
    'portfolio_id',
    ...(definition.storesReportType ? ['report_type'] : []),
    'report_date',
    ...(definition.storesLineNumber ? ['line_number'] : []),
    ...definition.columns.map((column) => column.name),
    'extra',
  ];
}

/**
 * Every column of the definition's table, in the order the row writers write them: the row's
 * values ({@link rowColumns}), then `load_id`, which the row writer adds: the same value for every
 * row of one load, the one its ledger row records (see `SliceLoader`).
 */
export function tableColumns(definition: ReportDefinition): string[] {
  return [...rowColumns(definition), 'load_id'];
}

/** How a row builder types values. */
export interface RowBuilderOptions {
  /**
   * What the warehouse's decimal columns keep exactly (`RowWriter.decimals`): a value they would
   * round fails the file. @defaultValue Postgres NUMERIC's
   */
  readonly decimals?: DecimalCapacity;
}

/** The row typer of {@link createRowValuesBuilder}, handing each row as an object keyed by column. */
export function createRowBuilder(definition: ReportDefinition, slice: Slice, fileName: string, options: RowBuilderOptions = {}): RowBuilder {
  const columns = rowColumns(definition);
  const build = createRowValuesBuilder(definition, slice, fileName, options);
  return (record, ordinal) => {
    const values = build(record, ordinal);
    const row: WarehouseRow = {};
    for (let i = 0; i < columns.length; i += 1) row[columns[i]!] = values[i]!;
    return row;
  };
}

/**
 * Builds the row typer for one file of one slice. Source names are mapped to columns by their
 * normalised name (never by position), so CSV headers and JSON keys feed the same columns; a
 * field no column claims is kept in `extra` under its source name.
 */
export function createRowValuesBuilder(definition: ReportDefinition, slice: Slice, fileName: string, options: RowBuilderOptions = {}): RowValuesBuilder {
  const decimals = options.decimals ?? POSTGRES_DECIMALS;
  const columns = definition.columns;
  const byName = new Map(columns.map((column, index) => [column.name, index]));
  // Per file: source names repeat on every record, so each is normalised once.
  const sourceToIndex = new Map<string, number>();
  const indexOf = (sourceName: string): number => {
    let index = sourceToIndex.get(sourceName);
    if (index === undefined) {
      index = byName.get(toColumnName(sourceName)) ?? -1;
      sourceToIndex.set(sourceName, index);
    }
    return index;
  };
  const keyIndexes = columns.flatMap((column, index) => (column.key ? [index] : []));
  const kinds = columns.map((column) => column.kind);
  const identifiers = columns.map((column) => column.identifier === true);
  const { storesReportType, storesLineNumber } = definition;
  // Scratch space reused by every record of the file: a million-row file must not allocate
  // an array per row for it. Nothing keeps a reference to it between calls.
  const values: (string | null)[] = new Array(columns.length).fill(null);
  // The names of the last record and where each goes (a column's index, or -1 for `extra`), and
  // which source name each column was given by: a CSV's records share their names, a JSON file's
  // almost always have the same ones, so this is worked out once per file, not per record.
  let lastNames: readonly string[] = [];
  let targets: number[] = [];
  let givenBy: (string | undefined)[] = new Array(columns.length).fill(undefined);
  // Each unlisted field's name as `extra` writes it, after a comma: `,"name":` (or '' for a name
  // that takes lossless-json's way, see extraKey). Worked out with the targets, not per record.
  let extraKeys: string[] = [];
  // Scratch space for `extra`'s text, reused by every record: its parts are joined a bounded
  // number at a time, so no record makes a string per field that lives until its last field.
  const extraParts: string[] = [];
  const mapNames = (names: readonly string[], where: string): void => {
    const mapped: number[] = new Array(names.length);
    const keys: string[] = new Array(names.length);
    const seenAs: (string | undefined)[] = new Array(columns.length).fill(undefined);
    for (let field = 0; field < names.length; field += 1) {
      const index = indexOf(names[field]!);
      mapped[field] = index;
      if (index < 0) {
        keys[field] = extraKey(names[field]!);
        continue;
      }
      if (seenAs[index] !== undefined) {
        throw new FileFormatError(
          `${fileName}, ${where}: fields "${printableText(seenAs[index]!, 80)}" and "${printableText(names[field]!, 80)}" both name column ${columns[index]!.name}; the file is ambiguous`,
        );
      }
      seenAs[index] = names[field];
    }
    lastNames = names;
    targets = mapped;
    givenBy = seenAs;
    extraKeys = keys;
  };
  // Every row of a file usually has the same effective date: check the calendar once.
  let lastGoodDate = '';
  // Built once per file: a record's field that fails the file, named as the user finds it.
  const refuse: (record: SourceRecord, field: number, index: number, problem: string) => never = (record, field, index, problem) =>
    fail({ column: columns[index]!, sourceName: record.names[field]!, fileName, where: record.where }, problem);

  return (record, ordinal) => {
    const { names } = record;
    if (names !== lastNames && !sameNames(names, lastNames)) mapNames(names, record.where);
    values.fill(null);
    // The unlisted fields, in file order, written into `extra`'s text as they come: a record may
    // have tens of thousands, and arrays or an object of them cost more than the text itself.
    let extraFields = 0;
    // Set once a field needs lossless-json's way (see flatJson): `extra` is then written whole by it.
    let extraWalk = false;
    let extraSegments: string[] | undefined;
    extraParts.length = 0;

    for (let field = 0; field < names.length; field += 1) {
      const value = record.values[field];
      const index = targets[field]!;
      if (index < 0) {
        extraFields += 1;
        if (extraWalk) continue;
        const key = extraKeys[field]!;
        const plain = typeof value === 'string' && isPlainJsonText(value);
        const text = plain ? value : flatJson(value);
        if (text === undefined || key === '') {
          extraWalk = true;
          continue;
        }
        if (extraFields === 1) extraParts.push('{', key.slice(1));
        else extraParts.push(key);
        // A string with nothing to escape goes between quotes as it is: no copy of it per field.
        if (plain) extraParts.push('"', text, '"');
        else extraParts.push(text);
        if (extraParts.length >= EXTRA_PARTS_PER_JOIN) {
          (extraSegments ??= []).push(extraParts.join(''));
          extraParts.length = 0;
        }
        continue;
      }
      if (value === null || value === undefined) continue;
      if (kinds[index] === 'decimal' && isLosslessNumber(value)) {
        // A JSON number, already checked against JSON's grammar (stricter than a decimal's): only
        // whether the column keeps it exactly is left to check.
        const text = value.toString();
        const misfit = decimalMisfit(text, decimals);
        if (misfit !== undefined) refuse(record, field, index, misfit);
        values[index] = text;
        continue;
      }
      const text =
        typeof value === 'string'
          ? value
          : (scalarText(value) ?? refuse(record, field, index, `expected a ${kinds[index]}, found ${Array.isArray(value) ? 'an array' : 'an object'}`));
      if (text === '') continue;
      switch (kinds[index]) {
        case 'text':
          if (identifiers[index]) {
            const identifier = toIdentifier(text);
            if (identifier !== '') values[index] = identifier;
            continue;
          }
          // Whitespace alone is no value; only a cell starting with a possible space can be that.
          if (mayBeSpace(text.charCodeAt(0)) && text.trim() === '') continue;
          values[index] = text;
          break;
        case 'decimal': {
          const decimal = toDecimalText(text);
          if (decimal === undefined) {
            if (text.trim() === '') continue;
            refuse(record, field, index, `${quote(text)} is not a decimal number (expected digits, an optional sign, point and exponent)`);
          }
          const misfit = decimalMisfit(decimal, decimals);
          if (misfit !== undefined) refuse(record, field, index, misfit);
          values[index] = decimal;
          break;
        }
        case 'date': {
          if (text === lastGoodDate) {
            values[index] = text;
            break;
          }
          const date = text.trim();
          if (date === '') continue;
          if (!isIsoDate(date)) refuse(record, field, index, `${quote(text)} is not a date in YYYY-MM-DD form`);
          if (date === text) lastGoodDate = date;
          values[index] = date;
          break;
        }
      }
    }

    for (const index of keyIndexes) {
      if (values[index] === null) {
        const column = columns[index]!;
        const state = givenBy[index] === undefined ? 'is missing' : `("${printableText(givenBy[index]!, 80)}") is empty`;
        throw new FileFormatError(`${fileName}, ${record.where}: key column ${column.name} ${state}; every record needs it`);
      }
    }

    // The values in rowColumns order, handed on as they are: no object per row for the loader to walk again.
    const row: RowValues = [slice.portfolioId];
    if (storesReportType) row.push(slice.reportType);
    row.push(slice.reportDate);
    if (storesLineNumber) row.push(ordinal);
    for (let index = 0; index < columns.length; index += 1) row.push(values[index]!);
    if (extraFields === 0) row.push(null);
    else if (extraWalk) row.push(stringify(extraObject(record, targets)) ?? null);
    else {
      extraParts.push('}');
      if (extraSegments === undefined) row.push(extraParts.join(''));
      else {
        extraSegments.push(extraParts.join(''));
        row.push(extraSegments.join(''));
      }
      extraParts.length = 0;
    }
    return row;
  };
}

/** Most parts of `extra`'s text held before they are joined into one string. */
const EXTRA_PARTS_PER_JOIN = 1024;

/**
 * A flat value's text in `extra` (string, number, boolean or null) as lossless-json's `stringify`
 * writes it, numbers with every digit; undefined for anything else, which takes lossless-json's
 * slower generic walk.
 */
function flatJson(value: unknown): string | undefined {
  if (typeof value === 'string') return JSON.stringify(value);
  if (isLosslessNumber(value)) return value.toString();
  if (value === null || typeof value === 'boolean') return String(value);
  return undefined;
}

/** Whether JSON writes `text` between quotes as it is: no control character, quote, backslash or surrogate. */
function isPlainJsonText(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x22 || code === 0x5c || (code >= 0xd800 && code <= 0xdfff)) return false;
  }
  return true;
}

/**
 * `,"name":`, what `extra` holds before a field's value; '' for a name that looks
 * like an array index ("7"), which an object lists first, in order: such a name takes the object's way.
 */
function extraKey(name: string): string {
  return ARRAY_INDEX.test(name) ? '' : `,${JSON.stringify(name)}:`;
}

/** What looks like an array index to an object: such keys are listed first, in numeric order. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

/** The record's unlisted fields (a target below 0) as an object, for lossless-json's `stringify`. */
function extraObject(record: SourceRecord, targets: readonly number[]): Record<string, unknown> {
  // No prototype: a field named "__proto__" must be kept as data, not set the prototype.
  const extra = Object.create(null) as Record<string, unknown>;
  for (let field = 0; field < record.names.length; field += 1) if (targets[field]! < 0) extra[record.names[field]!] = record.values[field];
  return extra;
}

/** Whether two records name the same fields in the same order (JSON keys are interned: mostly a pointer compare). */
function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** The text of a JSON value that is not a string (a number or a boolean); undefined for an object or an array. */
function scalarText(value: unknown): string | undefined {
  if (isLosslessNumber(value)) return value.toString();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** Where a value that fails the file stands: its column, the field's name in the file, the file and the record. */
interface FieldAt {
  readonly column: ReportColumn;
  readonly sourceName: string;
  readonly fileName: string;
  readonly where: string;
}

function fail({ column, sourceName, fileName, where }: FieldAt, problem: string): never {
  throw new FileFormatError(`${fileName}, ${where}, column ${column.name} ("${printableText(sourceName, 80)}"): ${problem}`);
}

/**
 * An identifier as stored (see `ReportColumn.identifier`): trimmed of Unicode spaces (trim's set
 * plus U+0085, which trim keeps) and in NFC. Text below U+0300 is already NFC and composes with
 * nothing before it, so an ASCII ISIN skips normalisation.
 */
export function toIdentifier(raw: string): string {
  let text = raw;
  if (text.length > 0 && (mayBeSpace(text.charCodeAt(0)) || mayBeSpace(text.charCodeAt(text.length - 1)))) text = text.replace(UNICODE_SPACES_AROUND, '');
  for (let i = 0; i < text.length; i += 1) if (text.charCodeAt(i) >= 0x300) return text.normalize('NFC');
  return text;
}

/** Unicode White_Space at either end: JavaScript's `\s` and U+0085 (NEXT LINE), which `\s` lacks. */
const UNICODE_SPACES_AROUND = /^[\s\u0085]+|[\s\u0085]+$/g;

/** Every character String.prototype.trim removes (and U+0085) is at most U+0020 or at least U+0085. */
function mayBeSpace(code: number): boolean {
  return code <= 0x20 || code >= 0x85;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}
