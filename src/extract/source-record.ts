/**
 * One record of an export file as the parsers hand it on: values under their source names
 * (a CSV header cell, a JSON key), in file order. Typing and column mapping happen later,
 * once per report definition, so both formats can feed both tables.
 */
export interface SourceRecord {
  /** Where the record sits, for error messages: `line 14` (CSV) or `record 3` (JSON, 1-based). */
  readonly where: string;
  /**
   * Values by source name. CSV values are strings (an empty cell is `''`).
   * JSON values are as parsed, except numbers, which are `LosslessNumber`s from lossless-json
   * so no digit is lost; nested objects and arrays stay as parsed.
   */
  readonly values: Readonly<Record<string, unknown>>;
}
