import type { DecimalColumnRule } from '../engine/decimal-column-rule.js';

/**
 * SQLite's declared type is only an affinity. NUMERIC is what the migrations declare; INTEGER keeps
 * the same; TEXT and BLOB keep the text as written. Only REAL rounds more: it stores a whole number
 * past 2^53 as the nearest float, which NUMERIC keeps as a 64-bit integer.
 */
export const SQLITE_DECIMAL_COLUMN: DecimalColumnRule = {
  declared: 'numeric',
  keeps: (type) => sqliteAffinity(type) !== 'real',
  repair: (table, column) => `re-create ${table} with ${column} declared numeric (SQLite cannot change a column's type in place)`,
};

/** The affinity of a declared type (lower case), by SQLite's rules in their order. */
function sqliteAffinity(type: string): 'integer' | 'text' | 'blob' | 'real' | 'numeric' {
  if (type.includes('int')) return 'integer';
  if (/char|clob|text/.test(type)) return 'text';
  if (type === '' || type.includes('blob')) return 'blob';
  if (/real|floa|doub/.test(type)) return 'real';
  return 'numeric';
}
