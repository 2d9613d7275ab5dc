import type { RowWriter } from '../engine/row-writer.js';
import { MYSQL_DECIMALS } from '../../reports/decimal-capacity.js';
import { MultiRowInsertWriter } from '../loading/multi-row-insert-writer.js';

/**
 * MySQL's {@link RowWriter}: multi-row INSERTs (see {@link MultiRowInsertWriter}), each a
 * server-side prepared statement the connection keeps (see `sessionMysqlPool`); decimals as
 * `DECIMAL(65,30)` keeps them.
 */
export class MysqlRowWriter extends MultiRowInsertWriter {
  constructor() {
    super(MYSQL_DECIMALS);
  }
}
