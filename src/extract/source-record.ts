/**
 * One record of an export file as the parsers hand it on: values under their source names
 * (a CSV header cell, a JSON key), in file order. Typing and column mapping happen later,
 * once per report definition, so both formats can feed both tables.
 */
export interface SourceRecord {
  /** Where the record sits, for error messages: `line 14` (CSV) or `record 3` (JSON, 1-based). */
  readonly where: string;
  /**
   * The source names, in file order. A CSV's records all share one array, its header, so the row
   * builder maps the names to columns once per file instead of once per record.
   */
  readonly names: readonly string[];
  /**
   * The values, by position in `names`. CSV values are strings (an empty cell is `''`).
   * JSON values are as parsed, except numbers, which are `LosslessNumber`s from lossless-json
   * so no digit is lost; nested objects and arrays stay as parsed.
   */
  readonly values: readonly unknown[];
}

/** The record of a parsed JSON object: its own keys in order, and their values. */
export function objectRecord(where: string, object: Readonly<Record<string, unknown>>): SourceRecord {
  return { where, names: Object.keys(object), values: Object.values(object) };
}
