import { sql, type Kysely, type Migration } from 'kysely';
import type { MigrationDialect } from '../../engine/migration-dialect.js';

/** The first schema: the two report tables and the ledger (MySQL's own, see `MigrationDialect.createTables`). */
export function createTables(dialect: MigrationDialect): Migration {
  if (dialect.createTables) return dialect.createTables;
  const timestamp = dialect.timestampType;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('index_report')
        .addColumn('portfolio_id', 'integer', (c) => c.notNull())
        .addColumn('report_date', 'date', (c) => c.notNull())
        .addColumn('effective_date', 'date', (c) => c.notNull())
        .addColumn('index_id', 'text', (c) => c.notNull())
        .addColumn('index_name', 'text')
        .addColumn('index_value', 'numeric')
        .addColumn('currency', 'text')
        .addColumn('close_market_value', 'numeric')
        .addColumn('open_market_value', 'numeric')
        .addColumn('close_divisor', 'numeric')
        .addColumn('open_divisor', 'numeric')
        .addColumn('extra', 'text')
        .execute();
      await db.schema.createIndex('index_report_slice').on('index_report').columns(['portfolio_id', 'report_date']).execute();

      await db.schema
        .createTable('constituent_report')
        .addColumn('portfolio_id', 'integer', (c) => c.notNull())
        .addColumn('report_type', 'text', (c) => c.notNull())
        .addColumn('report_date', 'date', (c) => c.notNull())
        .addColumn('line_number', 'integer', (c) => c.notNull())
        .addColumn('effective_date', 'date', (c) => c.notNull())
        .addColumn('isin', 'text', (c) => c.notNull())
        .addColumn('security_name', 'text')
        .addColumn('security_ticker', 'text')
        .addColumn('exchange_code', 'text')
        .addColumn('closing_price', 'numeric')
        .addColumn('currency', 'text')
        .addColumn('closing_fx', 'numeric')
        .addColumn('index_shares', 'numeric')
        .addColumn('index_weighting', 'numeric')
        .addColumn('extra', 'text')
        .addPrimaryKeyConstraint('constituent_report_pk', ['portfolio_id', 'report_type', 'report_date', 'line_number'])
        .execute();
      await db.schema.createIndex('constituent_report_isin').on('constituent_report').columns(['isin', 'report_date']).execute();

      await db.schema
        .createTable('report_loads')
        .addColumn('portfolio_id', 'integer', (c) => c.notNull())
        .addColumn('report_type', 'text', (c) => c.notNull())
        .addColumn('report_date', 'date', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('loaded', 'no_data', 'failed')`))
        .addColumn('row_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('format', 'text')
        .addColumn('file_name', 'text')
        .addColumn('bytes', 'bigint')
        .addColumn('content_sha256', 'text')
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('first_loaded_at', timestamp)
        .addColumn('updated_at', timestamp, (c) => c.notNull())
        .addColumn('checked_at', timestamp, (c) => c.notNull())
        .addPrimaryKeyConstraint('report_loads_pk', ['portfolio_id', 'report_type', 'report_date'])
        .execute();
      await db.schema.createIndex('report_loads_date').on('report_loads').columns(['report_date', 'status']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('report_loads').execute();
      await db.schema.dropTable('constituent_report').execute();
      await db.schema.dropTable('index_report').execute();
    },
  };
}
