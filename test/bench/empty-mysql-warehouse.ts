import mysql from 'mysql2/promise';
import { mysqlBaselineConnection } from './mysql-baseline.js';

/**
 * Empties every table of a migrated MySQL warehouse but the migrations' own bookkeeping, leaving it
 * as a fresh migration does (TRUNCATE fires no trigger, so the ledger's monthly counts are emptied
 * as tables of their own). Sides of a benchmark take turns on one warehouse this way: migrating a
 * new MariaDB database takes far longer than emptying one, and the smoke run has little time.
 */
export async function emptyMysqlWarehouse(databaseUrl: string): Promise<void> {
  const connection = await mysql.createConnection(mysqlBaselineConnection(databaseUrl));
  try {
    const [tables] = await connection.query<mysql.RowDataPacket[]>(
      "select table_name as name from information_schema.tables where table_schema = database() and table_type = 'BASE TABLE' and table_name not like 'kysely\\_%'",
    );
    if (tables.length === 0) throw new Error(`emptyMysqlWarehouse: ${databaseUrl.replace(/\/\/[^@]*@/, '//')} has no tables: migrate it first`);
    for (const { name } of tables) await connection.query(`truncate table \`${String(name)}\``);
  } finally {
    await connection.end();
  }
}
