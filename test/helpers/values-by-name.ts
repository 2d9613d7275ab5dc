import type { SourceRecord } from '../../src/extract/source-record.js';

/** A record's values keyed by source name, for assertions that read them by name. */
export function valuesByName(record: SourceRecord): Record<string, unknown> {
  const values: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  record.names.forEach((name, i) => (values[name] = record.values[i]));
  return values;
}
