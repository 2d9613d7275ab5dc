import type { RowWriter } from '../engine/row-writer.js';
import { SQLITE_DECIMALS } from '../../reports/decimal-capacity.js';
import { MultiRowInsertWriter } from '../loading/multi-row-insert-writer.js';

/**
 * SQLite's {@link RowWriter}: multi-row INSERTs (see {@link MultiRowInsertWriter}), each kept
 * prepared by the warehouse's statement cache; decimals as SQLite's NUMERIC affinity keeps them.
 */
export class SqliteRowWriter extends MultiRowInsertWriter {
  constructor() {
    super(SQLITE_DECIMALS);
  }
}
