import { isLosslessNumber, stringify } from 'lossless-json';
import { FileFormatError } from '../errors.js';
import { toColumnName } from '../extract/column-names.js';
import type { SourceRecord } from '../extract/source-record.js';
import { isIsoDate } from '../report-date.js';
import type { Slice } from '../slice.js';
import { toDecimalText } from './decimal-text.js';
import type { ReportColumn, ReportDefinition } from './report-definition.js';

/** A row ready for a report table: slice columns, typed columns and `extra`. */
export type WarehouseRow = Record<string, string | number | null>;

/** Turns one source record into a row; `ordinal` is its 1-based position in the file. */
export type RowBuilder = (record: SourceRecord, ordinal: number) => WarehouseRow;

/**
 * Builds the row typer for one file of one slice. Source names are mapped to columns by their
 * normalised name (never by position), so CSV headers and JSON keys feed the same columns; a
 * field no column claims is kept in `extra` under its source name.
 */
export function createRowBuilder(definition: ReportDefinition, slice: Slice, fileName: string): RowBuilder {
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

  return (record, ordinal) => {
    const values: (string | null)[] = new Array(columns.length).fill(null);
    const seenAs: (string | undefined)[] = new Array(columns.length);
    let extra: Record<string, unknown> | undefined;

    for (const sourceName in record.values) {
      const value = record.values[sourceName];
      const index = indexOf(sourceName);
      if (index < 0) {
        (extra ??= {})[sourceName] = value;
        continue;
      }
      const column = columns[index]!;
      if (seenAs[index] !== undefined) {
        throw new FileFormatError(
          `${fileName}, ${record.where}: fields "${seenAs[index]}" and "${sourceName}" both name column ${column.name}; the file is ambiguous`,
        );
      }
      seenAs[index] = sourceName;
      values[index] = typeValue(value, column, sourceName, fileName, record.where);
    }

    for (const index of keyIndexes) {
      if (values[index] === null) {
        const column = columns[index]!;
        const state = seenAs[index] === undefined ? 'is missing' : `("${seenAs[index]}") is empty`;
        throw new FileFormatError(
          `${fileName}, ${record.where}: key column ${column.name} ${state}; every record needs it`,
        );
      }
    }

    const row: WarehouseRow = { portfolio_id: slice.portfolioId };
    if (definition.storesReportType) row.report_type = slice.reportType;
    row.report_date = slice.reportDate;
    if (definition.storesLineNumber) row.line_number = ordinal;
    for (let index = 0; index < columns.length; index += 1) row[columns[index]!.name] = values[index]!;
    row.extra = extra === undefined ? null : stringify(extra) ?? null;
    return row;
  };
}

function typeValue(value: unknown, column: ReportColumn, sourceName: string, fileName: string, where: string): string | null {
  if (value === null || value === undefined) return null;
  const fail = (problem: string): never => {
    throw new FileFormatError(`${fileName}, ${where}, column ${column.name} ("${sourceName}"): ${problem}`);
  };
  let text: string;
  if (typeof value === 'string') text = value;
  else if (isLosslessNumber(value)) text = value.toString();
  else if (typeof value === 'number' || typeof value === 'boolean') text = String(value);
  else return fail(`expected a ${column.kind}, found ${Array.isArray(value) ? 'an array' : 'an object'}`);
  if (text.trim() === '') return null;

  switch (column.kind) {
    case 'text':
      return text;
    case 'decimal':
      return toDecimalText(text) ?? fail(`${quote(text)} is not a decimal number (expected digits, an optional sign, point and exponent)`);
    case 'date':
      return isIsoDate(text.trim()) ? text.trim() : fail(`${quote(text)} is not a date in YYYY-MM-DD form`);
  }
}

function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}
