import type { DecimalColumnRule } from '../engine/decimal-column-rule.js';

/** `numeric` without a precision: a precision or scale (`numeric(10,2)`) rounds, a float type rounds too. */
export const POSTGRES_DECIMAL_COLUMN: DecimalColumnRule = {
  declared: 'numeric',
  keeps: (type) => type === 'numeric',
  repair: (table, column) => `alter table ${table} alter column ${column} type numeric`,
};
