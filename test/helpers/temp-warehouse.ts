import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator } from 'kysely';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { migrateWarehouse, migrationsFor } from '../../src/warehouse/schema/migrate-warehouse.js';
import { openWarehouse, type WarehouseDialect } from '../../src/warehouse/open-warehouse.js';
import { SQLITE_MIGRATIONS } from '../../src/warehouse/sqlite/sqlite-migrations.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';

/** The Postgres server the tests use: loopback, trust auth (`.ci/run` makes sure it answers). */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';

/** The MySQL (MariaDB) server the tests use: loopback, root without a password (`.ci/run` makes sure it answers). */
export const TEST_MYSQL_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

export const DIALECTS: readonly WarehouseDialect[] = ['sqlite', 'postgres', 'mysql'];

/** An empty database of its own: a SQLite file in a temporary directory, or a new Postgres or MySQL database. */
export async function createTempDatabase(dialect: WarehouseDialect): Promise<{ databaseUrl: string; drop(): Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-test-'));
    return { databaseUrl: `sqlite:${join(dir, 'warehouse.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `report_sync_test_${randomBytes(6).toString('hex')}`;
  if (dialect === 'mysql') return createTempMysqlDatabase(name);
  const admin = new pg.Client({ connectionString: `${TEST_POSTGRES_URL}/postgres` });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    databaseUrl: `${TEST_POSTGRES_URL}/${name}`,
    drop: async () => {
      const client = new pg.Client({ connectionString: `${TEST_POSTGRES_URL}/postgres` });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A migrated warehouse of its own; `close()` closes and removes it. With `before`, the migrations
 * stop short of the one named, as a warehouse an earlier release left (`migrateWarehouse` then
 * brings it up to date).
 */
export async function createTempWarehouse(
  dialect: WarehouseDialect = 'sqlite',
  options: { readonly before?: string } = {},
): Promise<WarehouseHandle & { readonly databaseUrl: string }> {
  const database = await createTempDatabase(dialect);
  const warehouse = await openWarehouse(database.databaseUrl);
  if (options.before === undefined) await migrateWarehouse(warehouse);
  else await migrateBefore(warehouse, options.before);
  return {
    ...warehouse,
    databaseUrl: database.databaseUrl,
    close: async () => {
      await warehouse.close();
      await database.drop();
    },
  };
}

/** A new MySQL database, dropped with whatever is in it. */
async function createTempMysqlDatabase(name: string): Promise<{ databaseUrl: string; drop(): Promise<void> }> {
  const admin = async (statement: string) => {
    const connection = await mysql.createConnection(TEST_MYSQL_URL);
    try {
      await connection.query(statement);
    } finally {
      await connection.end();
    }
  };
  await admin(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  return { databaseUrl: `${TEST_MYSQL_URL}/${name}`, drop: () => admin(`DROP DATABASE IF EXISTS ${name}`) };
}

/** The names of the migrations from `first` on, in order: what `migrate` applies to a warehouse whose history ends just before it. */
export function migrationNamesFrom(first: string): string[] {
  const names = Object.keys(migrationsFor(SQLITE_MIGRATIONS));
  if (!names.includes(first)) throw new Error(`no migration is named ${first}: the names are ${names.join(', ')}`);
  return names.filter((name) => name >= first);
}

/** Applies the migrations listed before `name` (which must be one of them), and none after. */
async function migrateBefore(warehouse: WarehouseHandle, name: string): Promise<void> {
  const all = Object.entries(migrationsFor(warehouse.engine.migrations));
  const stop = all.findIndex(([candidate]) => candidate === name);
  if (stop < 0) throw new Error(`no migration is named ${name}: the names are ${all.map(([candidate]) => candidate).join(', ')}`);
  const earlier = Object.fromEntries(all.slice(0, stop));
  const { error } = await new Migrator({ db: warehouse.db, provider: { getMigrations: async () => earlier } }).migrateToLatest();
  if (error) throw error;
}
