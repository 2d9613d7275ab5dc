import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { missingAnalyticsObjects, restoreAnalyticsObjects } from '../../../../src/warehouse/schema/analytics-objects.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

/**
 * Every index and view but the primary keys', with its definition as the database keeps it. The
 * monthly counts' key and pending indexes (Postgres, MySQL) are their table's, kept by migration
 * 0007: no analytics objects; its pair-first index (0008, MySQL) is one.
 */
async function definitions(warehouse: WarehouseHandle): Promise<Record<string, string>> {
  if (warehouse.engine.dialect === 'mysql') return mysqlDefinitions(warehouse);
  const { rows } =
    warehouse.engine.dialect === 'sqlite'
      ? await sql<{ name: string; definition: string }>`
          select type || ' ' || name as name, sql as definition from sqlite_master where type in ('index', 'view') and sql is not null`.execute(warehouse.db)
      : await sql<{ name: string; definition: string }>`
          select 'index ' || indexname as name, indexdef as definition from pg_indexes where schemaname = current_schema() and indexname not like '%_pk' and indexname not like 'kysely_%'
            and indexname not in ('report_loads_monthly_key', 'report_loads_monthly_pending')
          union all select 'view ' || viewname, definition from pg_views where schemaname = current_schema()`.execute(warehouse.db);
  // SQLite keeps the statement's own text: compared without its spacing, identifier quotes and `if not exists`.
  const normalised = (text: string) =>
    warehouse.engine.dialect === 'sqlite'
      ? text
          .replace(/\s+/g, ' ')
          .replace(/ if not exists/i, '')
          .replaceAll('"', '')
          .trim()
      : text;
  return Object.fromEntries(rows.map((row) => [row.name, normalised(row.definition)]));
}

/** MySQL keeps no index's statement: each is its table, uniqueness and columns in order; a view is its query as the server rewrote it. */
async function mysqlDefinitions(warehouse: WarehouseHandle): Promise<Record<string, string>> {
  const { rows } = await sql<{ name: string; definition: string }>`
    select concat('index ', index_name) as name,
      concat(table_name, case when non_unique = 0 then ' unique (' else ' (' end, group_concat(column_name order by seq_in_index separator ', '), ')') as definition
    from information_schema.statistics
    where table_schema = database() and index_name not in ('PRIMARY', 'report_loads_monthly_key', 'report_loads_monthly_pending') and table_name not like 'kysely_%'
    group by table_name, index_name, non_unique
    union all select concat('view ', table_name), view_definition from information_schema.views where table_schema = database()`.execute(warehouse.db);
  return Object.fromEntries(rows.map((row) => [row.name, row.definition]));
}

describe.each(DIALECTS)('the indexes and views on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('a migrated warehouse lacks none, and restoring changes nothing', async () => {
    expect(await missingAnalyticsObjects(warehouse)).toEqual([]);
    const before = await definitions(warehouse);
    expect(await restoreAnalyticsObjects(warehouse)).toEqual([]);
    expect(await definitions(warehouse)).toEqual(before);
  });

  it('every one dropped is named, and re-created exactly as the migrations made it', async () => {
    const migrated = await definitions(warehouse);
    const names = Object.keys(migrated);
    // The pair-first monthly counts' index is MySQL's alone (migration 0008).
    expect(names).toHaveLength(dialect === 'mysql' ? 10 : 9);
    // The views over latest_loaded_day first, then it, then the indexes.
    const dropOrder = (name: string) => (name === 'view latest_loaded_day' ? 1 : name.startsWith('view') ? 0 : 2);
    for (const name of [...names].sort((a, b) => dropOrder(a) - dropOrder(b))) {
      // MySQL names an index within its table.
      const table = dialect === 'mysql' && name.startsWith('index') ? ` on ${migrated[name]!.split(' ')[0]}` : '';
      await sql.raw(`drop ${name}${table}`).execute(warehouse.db);
    }
    expect((await missingAnalyticsObjects(warehouse)).sort()).toEqual([...names].sort());
    expect((await restoreAnalyticsObjects(warehouse)).sort()).toEqual([...names].sort());
    expect(await definitions(warehouse)).toEqual(migrated);
    expect(await missingAnalyticsObjects(warehouse)).toEqual([]);
  });
});
