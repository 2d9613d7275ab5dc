import type { DecimalColumnRule } from '../engine/decimal-column-rule.js';

/**
 * `DECIMAL(65,30)`, the widest MySQL and MariaDB have (see `MYSQL_DECIMALS`): any other precision
 * or scale rounds or refuses some of the values the row builder lets through.
 */
export const MYSQL_DECIMAL_COLUMN: DecimalColumnRule = {
  declared: 'decimal(65,30)',
  keeps: (type) => type === 'decimal(65,30)',
  repair: (table, column) => `alter table ${table} modify ${column} decimal(65,30)`,
};
