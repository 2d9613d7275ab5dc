import type { Kysely } from 'kysely';
import { ConfigError } from '../../errors/sync-error.js';
import type { WarehouseHandle } from '../engine/warehouse-engine.js';
import { readWarehouseTables } from './read-warehouse-tables.js';
import { writtenColumns } from './written-columns.js';

/** Kysely's record of the migrations applied (its default name, which report-sync keeps). */
const MIGRATION_TABLE = 'kysely_migration';

/** What a warehouse's `kysely_migration` says, held against the migrations this version knows. */
export interface MigrationHistory {
  /** The migrations it lists, in the order Kysely reads them (by timestamp, then name). */
  readonly recorded: readonly string[];
  /** The known migrations it does not list, in order: what `migrate` would apply. */
  readonly pending: readonly string[];
  /**
   * What is wrong with it (a migration this version does not know, one missing before a later
   * one, rows out of order, or none listed in a warehouse that has report-sync's tables) and
   * how to repair it, as a `CONFIG_INVALID` error (exit 2); `undefined` when it is sound.
   */
  readonly damage: ConfigError | undefined;
}

/**
 * Reads `kysely_migration` without changing anything and says what is wrong with it, in the terms
 * of its rows: Kysely's own refusal ("corrupted migrations: …") names neither the rows to fix nor how.
 * `known` are the migration names of this version (any order).
 */
export async function readMigrationHistory(warehouse: WarehouseHandle, known: readonly string[]): Promise<MigrationHistory> {
  // Kysely runs migrations in the order of their names.
  const order = [...known].sort();
  const tables = await readWarehouseTables(warehouse);
  const where = `the migration history of the warehouse at ${warehouse.location} (table ${MIGRATION_TABLE})`;
  const exists = tables.has(MIGRATION_TABLE);
  const db = warehouse.db as unknown as Kysely<{ kysely_migration: { name: string; timestamp: string } }>;
  const rows = exists ? await db.selectFrom(MIGRATION_TABLE).select(['name', 'timestamp']).execute() : [];
  // The order Kysely's Migrator reads them in: by timestamp, ties by name.
  rows.sort((a, b) => new Date(a.timestamp).getTime() - new Date(b.timestamp).getTime() || a.name.localeCompare(b.name));
  const recorded = rows.map((row) => row.name);

  // No history at all beside report-sync's tables: `migrate` would create them again (and fail).
  const present = [...writtenColumns().keys()].filter((table) => tables.has(table));
  if (recorded.length === 0 && present.length > 0) {
    const complete = [...writtenColumns()].every(([table, columns]) => columns.every((column) => tables.get(table)?.has(column)));
    // One timestamp for all: ties go by name, which is the order they run in.
    const now = new Date().toISOString();
    const record = `insert into ${MIGRATION_TABLE} (name, timestamp) values ${order.map((name) => `(${quote(name)}, ${quote(now)})`).join(', ')}`;
    const table = exists ? 'is empty' : 'is missing';
    const create = exists ? '' : `create table ${MIGRATION_TABLE} (name varchar(255) primary key, timestamp varchar(255) not null); `;
    return {
      recorded,
      pending: [],
      damage: new ConfigError(
        `${where} ${table}, though the warehouse has report-sync's tables (${present.join(', ')}), so report-sync cannot tell which migrations it has had. ` +
          (complete
            ? `Its tables have every column this version writes, so it has had all of them: record them (${create}${record}), or restore the warehouse from a backup`
            : `Restore the warehouse from a backup, or record the migrations its tables already have, in order, of ${order.join(', ')} (${create}insert into ${MIGRATION_TABLE} (name, timestamp) values (…))`),
      ),
    };
  }

  const pending = order.filter((name) => !recorded.includes(name));
  const unknown = recorded.filter((name) => !order.includes(name));
  const recordedKnown = recorded.filter((name) => order.includes(name));
  const lastIndex = Math.max(-1, ...recordedKnown.map((name) => order.indexOf(name)));
  const skipped = order.slice(0, lastIndex + 1).filter((name) => !recorded.includes(name));

  const problems: string[] = [];
  if (unknown.length > 0) {
    problems.push(
      `it lists ${unknown.join(', ')}, which this version of report-sync does not know (it knows ${order.join(', ')}): ` +
        `either a newer report-sync migrated this warehouse (run that version or a later one), ` +
        `or the table was edited (then delete ${unknown.length === 1 ? 'that row' : 'those rows'}: delete from ${MIGRATION_TABLE} where name in (${unknown.map(quote).join(', ')}))`,
    );
  }
  if (skipped.length > 0) {
    const puts = skipped.map((name) => {
      // A timestamp equal to the next listed migration's sorts just before it (ties go by name).
      const next = rows.find((row) => order.includes(row.name) && row.name > name)!;
      return `insert into ${MIGRATION_TABLE} (name, timestamp) values (${quote(name)}, ${quote(next.timestamp)})`;
    });
    problems.push(
      `it lacks ${skipped.join(', ')}, though it lists the later ${order[lastIndex]}, so the table was edited: ` +
        `if the warehouse's tables are intact, put ${skipped.length === 1 ? 'the row' : 'the rows'} back (${puts.join('; ')}), otherwise restore the warehouse from a backup`,
    );
  }
  if (problems.length === 0 && recordedKnown.some((name, i) => name !== order[i])) {
    problems.push(
      `its timestamps put the migrations in the order ${recordedKnown.join(', ')}, not the order they run in (${order.slice(0, recordedKnown.length).join(', ')}), so the table was edited: ` +
        'give each row a timestamp no earlier than the one before it in that order',
    );
  }
  return {
    recorded,
    pending: problems.length === 0 ? pending : [],
    damage:
      problems.length === 0 ? undefined : new ConfigError(`${where} is damaged, and report-sync migrate and every sync refuse it until it is repaired: ${problems.join('; ')}`),
  };
}

function quote(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
