// The strings here are code snippets the scanner must find, written as source text on purpose (template syntax included).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeZip } from '../helpers/make-zip.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * Every SQL statement goes through Kysely with its values as parameters. Two halves:
 *
 * 1. A scan of src/ and jobs/ (TypeScript syntax trees, not text search) for every way around
 *    that: raw SQL (`sql.raw`, `sql.lit`, `CompiledQuery.raw`), identifiers from code (`sql.id`,
 *    `sql.table`, `sql.ref`, `.dynamic`), `sql` templates with interpolations, driver calls
 *    (`.prepare`, `.exec`, `.query`, `.pragma`), SQL text built by concatenation, and imports of a
 *    database driver. Each use must be on the allow-list below, with its reason; an entry that no
 *    longer matches anything fails too, so the list stays honest.
 * 2. Hostile text inside export files (SQL and COPY metacharacters, quotes, backslashes) loaded
 *    end to end into both warehouses arrives verbatim, and the tables are intact.
 */

const ROOT = new URL('../../', import.meta.url).pathname;

type FindingKind = 'raw-sql' | 'identifier' | 'sql-template' | 'driver-call' | 'concatenated-sql' | 'driver-import';

interface Finding {
  readonly file: string;
  readonly line: number;
  readonly kind: FindingKind;
  readonly text: string;
}

interface Allowed {
  readonly file: string;
  readonly kind: FindingKind;
  /** A piece of the flagged code that identifies it. */
  readonly code: string;
  readonly reason: string;
}

const ALLOWED: readonly Allowed[] = [
  {
    file: 'src/warehouse/sqlite/sqlite-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_insert',
    reason: 'constant text: the insert trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_update',
    reason: 'constant text: the update trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_delete',
    reason: 'constant text: the delete trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-migrations.ts',
    kind: 'concatenated-sql',
    code: 'create trigger report_loads_monthly_insert',
    reason: 'constant text: the insert trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-migrations.ts',
    kind: 'concatenated-sql',
    code: 'create trigger report_loads_monthly_update',
    reason: 'constant text: the update trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-migrations.ts',
    kind: 'concatenated-sql',
    code: 'create trigger report_loads_monthly_delete',
    reason: 'constant text: the delete trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/postgres/postgres-migrations.ts',
    kind: 'sql-template',
    code: 'drop function ${sql.id(name)}() cascade',
    reason: 'a function name from the migration’s own constant list (undoing migration 0007), quoted as an identifier',
  },
  {
    file: 'src/warehouse/postgres/postgres-migrations.ts',
    kind: 'identifier',
    code: 'sql.id(name)',
    reason: 'a function name from the migration’s own constant list (undoing migration 0007), quoted as an identifier',
  },
  {
    file: 'src/queue/export-queue.ts',
    kind: 'driver-call',
    code: "['zscore', queue.keys.completed!, job.opts.jobId!]",
    reason: 'a Redis pipeline (ZSCORE in the completed and failed sets), not SQL',
  },
  {
    file: 'src/auth/redis-token-source.ts',
    kind: 'driver-call',
    code: 'transaction.exec()',
    reason: 'a Redis MULTI (SET of the shared token and its freshness key), not SQL',
  },
  {
    file: 'src/warehouse/sqlite/migrate-holding-sqlite-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('commit')",
    reason: 'constant text: ends the transaction SQLite migrations run in, holding the write lock',
  },
  {
    file: 'src/warehouse/sqlite/migrate-holding-sqlite-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('rollback')",
    reason: 'constant text: undoes every migration of a run that failed',
  },
  {
    file: 'src/warehouse/postgres/migrate-holding-postgres-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('begin')",
    reason: 'constant text: the transaction Postgres migrations run in, holding the migration lock',
  },
  {
    file: 'src/warehouse/postgres/migrate-holding-postgres-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('commit')",
    reason: 'constant text: ends the transaction Postgres migrations run in, releasing the migration lock',
  },
  {
    file: 'src/warehouse/postgres/migrate-holding-postgres-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('rollback')",
    reason: 'constant text: undoes every migration of a run that failed',
  },
  {
    file: 'src/warehouse/postgres/migrate-holding-postgres-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('select pg_try_advisory_xact_lock(3853314791062309107) as locked')",
    reason: 'constant text: tries the migration lock (a constant key) inside the migrations’ transaction',
  },
  {
    file: 'src/warehouse/mysql/migrate-holding-mysql-lock.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw("select get_lock(\'ea586330-2c93-47c8-908d-981d9d270f9d\', 0) as locked")',
    reason: 'constant text: tries the migration lock (a constant name) on the migrations’ connection',
  },
  {
    file: 'src/warehouse/mysql/migrate-holding-mysql-lock.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw("do release_lock(\'ea586330-2c93-47c8-908d-981d9d270f9d\')")',
    reason: 'constant text: lets go of the migration lock once the migrations are done',
  },
  {
    file: 'src/warehouse/mysql/fold-monthly-counts.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('begin')",
    reason: 'constant text: the transaction a fold of the monthly ledger counts runs in',
  },
  {
    file: 'src/warehouse/mysql/fold-monthly-counts.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('commit')",
    reason: 'constant text: ends a fold of the monthly ledger counts',
  },
  {
    file: 'src/warehouse/mysql/fold-monthly-counts.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('rollback')",
    reason: 'constant text: undoes a fold of the monthly ledger counts that failed',
  },
  {
    file: 'src/warehouse/mysql/fold-monthly-counts.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw("select get_lock(\'report-sync:report_loads_monthly:fold\', 0) as locked")',
    reason: 'constant text: tries the fold lock (a constant name) on the fold’s connection',
  },
  {
    file: 'src/warehouse/mysql/fold-monthly-counts.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw("do release_lock(\'report-sync:report_loads_monthly:fold\')")',
    reason: 'constant text: lets go of the fold lock once the fold is done',
  },
  {
    file: 'src/warehouse/postgres/postgres-slice-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('begin')",
    reason: 'constant text: a slice write’s transaction, begun on one connection',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-slice-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('begin immediate')",
    reason: 'constant text: SQLite’s write lock taken at the start of a slice write',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-slice-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('pragma busy_timeout = 0')",
    reason: 'constant text: SQLite’s busy wait off while the write lock is tried',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-slice-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('pragma temp_store = memory')",
    reason: 'constant text: a small transaction’s savepoint journal kept in memory',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-slice-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('pragma temp_store = default')",
    reason: 'constant text: SQLite’s own temp_store again, for a transaction that is not small',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-slice-lock.ts',
    kind: 'concatenated-sql',
    code: 'CompiledQuery.raw(`pragma busy_timeout = ${Math.trunc(busyTimeoutMs)}`)',
    reason: 'a number from the settings (Math.trunc of a validated integer), restoring the busy wait; PRAGMA takes no parameters',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-slice-lock.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw(`pragma busy_timeout = ${Math.trunc(busyTimeoutMs)}`)',
    reason: 'a number from the settings (Math.trunc of a validated integer), restoring the busy wait; PRAGMA takes no parameters',
  },
  {
    file: 'src/warehouse/engine/index-definition.ts',
    kind: 'sql-template',
    code: 'index if not exists ${sql.id(index.name)} on ${sql.table(index.table)}',
    reason: 'constant text: re-creates one of report-sync’s own indexes, name, table and columns from the fixed list of analytics-objects.ts',
  },
  {
    file: 'src/warehouse/engine/index-definition.ts',
    kind: 'sql-template',
    code: 'where ${sql.ref(where.column)} = ${sql.lit(where.equals)}',
    reason: 'constant text: the filter of one of report-sync’s own partial indexes (status = a fixed status), from the fixed list of analytics-objects.ts',
  },
  {
    file: 'src/warehouse/engine/index-definition.ts',
    kind: 'raw-sql',
    code: "sql.raw(index.unique === true ? 'unique ' : '')",
    reason: 'constant text: one of two keywords, chosen by a flag of the fixed index list',
  },
  {
    file: 'src/warehouse/engine/index-definition.ts',
    kind: 'raw-sql',
    code: 'sql.lit(where.equals)',
    reason: 'a status from the fixed index list, written as a literal: an index definition takes no parameters',
  },
  { file: 'src/warehouse/engine/index-definition.ts', kind: 'identifier', code: 'sql.id(index.name)', reason: 'the name of one of report-sync’s own indexes, from a fixed list' },
  { file: 'src/warehouse/engine/index-definition.ts', kind: 'identifier', code: 'sql.table(index.table)', reason: 'one of report-sync’s own tables, from the fixed index list' },
  {
    file: 'src/warehouse/engine/index-definition.ts',
    kind: 'identifier',
    code: 'sql.ref(column)',
    reason: 'a column of one of report-sync’s own indexes, from the fixed index list',
  },
  {
    file: 'src/warehouse/engine/index-definition.ts',
    kind: 'identifier',
    code: 'sql.ref(where.column)',
    reason: 'the filtered column of a partial index, from the fixed index list',
  },
  {
    file: 'src/warehouse/mysql/mysql-engine.ts',
    kind: 'sql-template',
    code: 'create or replace view ${sql.id(name)} as ${query}',
    reason: 'constant text: re-creates one of report-sync’s own views (MySQL), name and query from a fixed list',
  },
  {
    file: 'src/warehouse/mysql/mysql-engine.ts',
    kind: 'identifier',
    code: 'sql.id(name)',
    reason: 'the name of one of report-sync’s own views, from the fixed list of analytics-objects.ts',
  },
  { file: 'src/warehouse/mysql/mysql-engine.ts', kind: 'raw-sql', code: "CompiledQuery.raw('select utc_timestamp(3) as now')", reason: 'constant text: the warehouse clock' },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_insert',
    reason: 'constant text: the insert trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_update',
    reason: 'constant text: the update trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_delete',
    reason: 'constant text: the delete trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_totals_insert',
    reason: 'constant text: the insert trigger of the monthly totals (migration 0009), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_totals_update',
    reason: 'constant text: the update trigger of the monthly totals (migration 0009), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'raw-sql',
    code: 'create trigger report_loads_monthly_totals_delete',
    reason: 'constant text: the delete trigger of the monthly totals (migration 0009), assembled from the module’s own constant SQL fragments',
  },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw("select get_lock(\'report-sync:report_loads_monthly:fold\', 5) as locked")',
    reason: 'constant text: waits for the fold lock (a constant name) on the migrations’ connection (migration 0009)',
  },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw("do release_lock(\'report-sync:report_loads_monthly:fold\')")',
    reason: 'constant text: lets go of the fold lock once migration 0009 is done',
  },
  {
    file: 'src/warehouse/mysql/mysql-migrations.ts',
    kind: 'concatenated-sql',
    code: 'create trigger report_loads_monthly_',
    reason: 'constant text: a trigger of the monthly ledger counts (migration 0007), assembled from the module’s own constant SQL fragments',
  },
  { file: 'src/warehouse/mysql/mysql-slice-lock.ts', kind: 'raw-sql', code: "CompiledQuery.raw('begin')", reason: 'constant text: begins a transaction of slices' },
  {
    file: 'src/warehouse/mysql/mysql-slice-lock.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw(LOCK_SQL, [HOLDS_SLICE_LOCKS, key, wait ? LOCK_WAIT_SECONDS : 0])',
    reason: 'constant text (LOCK_SQL): the slice’s named lock and the warehouse clock; the slice and the wait are parameters',
  },
  {
    file: 'src/warehouse/mysql/on-conflict-as-duplicate-key-plugin.ts',
    kind: 'sql-template',
    code: 'values(${sql.id(value.column.column.name)})',
    reason: 'the column of an upsert Kysely already compiles (on conflict … excluded.<column>), said as MySQL says it',
  },
  {
    file: 'src/warehouse/mysql/on-conflict-as-duplicate-key-plugin.ts',
    kind: 'identifier',
    code: 'sql.id(value.column.column.name)',
    reason: 'the column of an upsert Kysely already compiles, from report-sync’s own statements',
  },
  { file: 'src/warehouse/mysql/open-mysql.ts', kind: 'driver-import', code: "'mysql2'", reason: 'builds the mysql2 pool Kysely’s MysqlDialect runs on' },
  { file: 'src/warehouse/mysql/session-mysql-pool.ts', kind: 'driver-import', code: "'mysql2'", reason: 'types of the pool it wraps for Kysely’s MysqlDialect' },
  {
    file: 'src/warehouse/mysql/session-mysql-pool.ts',
    kind: 'driver-call',
    code: "query<mysql.RowDataPacket[]>('select @@session.sql_mode as sql_mode, @@global.local_infile as local_infile')",
    reason: 'constant text: reads the new connection’s sql_mode, which must be strict, and whether the server takes local files (LOAD DATA LOCAL INFILE)',
  },
  {
    file: 'src/warehouse/mysql/session-mysql-pool.ts',
    kind: 'driver-call',
    code: 'connection.promise().query(statement)',
    reason: 'constant text from SESSION_SETUP: the new connection’s isolation level, zone, sql_mode and temporary table size',
  },
  {
    file: 'src/warehouse/mysql/session-mysql-pool.ts',
    kind: 'driver-call',
    code: 'connection.query(sql, done)',
    reason: 'runs a statement Kysely compiled that has no parameters (with parameters it is a prepared statement: execute)',
  },
  {
    file: 'src/warehouse/mysql/session-mysql-pool.ts',
    kind: 'driver-call',
    code: 'connection.query(sql, parameters)',
    reason: 'Kysely’s streamed query, passed on as Kysely compiled it: values as parameters',
  },
  {
    file: 'src/warehouse/mysql/session-mysql-pool.ts',
    kind: 'driver-call',
    code: 'connection.query(RELEASE_SLICE_LOCKS',
    reason: 'constant text: releases the session’s slice locks after its transaction ended',
  },
  {
    file: 'src/warehouse/postgres/postgres-engine.ts',
    kind: 'sql-template',
    code: 'create or replace view ${sql.id(name)} as ${query}',
    reason: 'constant text: re-creates one of report-sync’s own views (Postgres), name and query from a fixed list',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-engine.ts',
    kind: 'sql-template',
    code: 'create view if not exists ${sql.id(name)} as ${query}',
    reason: 'constant text: re-creates one of report-sync’s own views (SQLite), name and query from a fixed list',
  },
  {
    file: 'src/warehouse/postgres/postgres-engine.ts',
    kind: 'identifier',
    code: 'sql.id(name)',
    reason: 'the name of one of report-sync’s own views, from the fixed list of analytics-objects.ts',
  },
  {
    file: 'src/warehouse/sqlite/sqlite-engine.ts',
    kind: 'identifier',
    code: 'sql.id(name)',
    reason: 'the name of one of report-sync’s own views, from the fixed list of analytics-objects.ts',
  },
  {
    file: 'src/warehouse/ledger/ledger-writer.ts',
    kind: 'raw-sql',
    code: "sql.lit('loaded')",
    reason: 'a constant written as a literal: bound, SQLite re-planned the ledger reads at each run (the partial index depends on it)',
  },
  { file: 'src/warehouse/ledger/ledger-writer.ts', kind: 'raw-sql', code: 'sql.lit(1)', reason: 'a constant LIMIT written as a literal (see the ledger reads)' },
  { file: 'src/warehouse/ledger/ledger-writer.ts', kind: 'raw-sql', code: 'sql.lit(2)', reason: 'a constant LIMIT written as a literal (see the ledger reads)' },
  { file: 'src/warehouse/loading/commit-groups.ts', kind: 'raw-sql', code: "CompiledQuery.raw('commit')", reason: 'constant text: commits a group of slice writes' },
  { file: 'src/warehouse/loading/commit-groups.ts', kind: 'raw-sql', code: "CompiledQuery.raw('rollback')", reason: 'constant text: undoes a group of slice writes' },
  {
    file: 'src/warehouse/loading/commit-groups.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('savepoint report_sync_slice')",
    reason: 'constant text: one slice’s write within a group',
  },
  {
    file: 'src/warehouse/loading/commit-groups.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('release savepoint report_sync_slice')",
    reason: 'constant text: keeps one slice’s write',
  },
  {
    file: 'src/warehouse/loading/commit-groups.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('rollback to savepoint report_sync_slice')",
    reason: 'constant text: undoes one slice’s write alone',
  },
  {
    file: 'src/warehouse/postgres/postgres-slice-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('select pg_advisory_xact_lock(hashtextextended($1, 0)), statement_timestamp() as now', [key])",
    reason: 'constant text: the slice’s advisory lock, waited for, and the warehouse clock; the slice is the parameter $1',
  },
  {
    file: 'src/warehouse/postgres/postgres-slice-lock.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('select pg_try_advisory_xact_lock(hashtextextended($1, 0)) as locked, statement_timestamp() as now', [key])",
    reason: 'constant text: the slice’s advisory lock, if free, and the warehouse clock; the slice is the parameter $1',
  },
  { file: 'src/warehouse/postgres/postgres-engine.ts', kind: 'raw-sql', code: "CompiledQuery.raw('select now() as now')", reason: 'constant text: the warehouse clock' },
  {
    file: 'src/warehouse/sqlite/sqlite-driver.ts',
    kind: 'driver-import',
    code: 'better-sqlite3',
    reason: 'loads the better-sqlite3 package for the Node.js running, which open-sqlite and the checkpoint thread open the file with',
  },
  { file: 'src/warehouse/postgres/open-postgres.ts', kind: 'driver-import', code: "'pg'", reason: 'builds the pg pool Kysely’s PostgresDialect runs on' },
  {
    file: 'src/warehouse/sqlite/open-sqlite.ts',
    kind: 'driver-call',
    code: "database.pragma('journal_mode = WAL')",
    reason: 'constant text: connection setting, no data',
  },
  {
    file: 'src/warehouse/sqlite/open-sqlite.ts',
    kind: 'driver-call',
    code: "database.pragma('synchronous = NORMAL')",
    reason: 'constant text: connection setting, no data',
  },
  {
    file: 'src/warehouse/sqlite/open-sqlite.ts',
    kind: 'driver-call',
    code: 'database.prepare(sql)',
    reason: 'statement cache under Kysely’s SqliteDialect: prepares the SQL text Kysely compiled, values stay parameters',
  },
  {
    file: 'src/warehouse/sqlite/wal-checkpoint-worker.ts',
    kind: 'driver-call',
    code: "database.pragma('wal_checkpoint(PASSIVE)')",
    reason: 'constant text: copies the WAL into the database file, no data',
  },
  {
    file: 'src/warehouse/sqlite/wal-checkpointer.ts',
    kind: 'driver-call',
    code: 'database.pragma(`wal_autocheckpoint = ${',
    reason: 'a constant number (1,000 or 10,000 pages): the writer’s own checkpoint threshold; PRAGMA takes no parameters',
  },
  {
    file: 'src/warehouse/sqlite/wal-checkpointer.ts',
    kind: 'concatenated-sql',
    code: 'database.pragma(`wal_autocheckpoint = ${',
    reason: 'a constant number (1,000 or 10,000 pages): the writer’s own checkpoint threshold; PRAGMA takes no parameters',
  },
  {
    file: 'src/warehouse/postgres/copying-postgres-pool.ts',
    kind: 'driver-import',
    code: 'pg-copy-streams',
    reason: 'COPY FROM STDIN for the slice loader: the statement is compiled by Kysely, the rows travel as COPY data, not SQL',
  },
  {
    file: 'src/warehouse/postgres/copying-postgres-pool.ts',
    kind: 'driver-import',
    code: "'pg'",
    reason: 'types of the pool it wraps for Kysely’s PostgresDialect',
  },
  {
    file: 'src/warehouse/postgres/copying-postgres-pool.ts',
    kind: 'driver-call',
    code: 'client.query(copyFrom(statement))',
    reason: 'runs the COPY statement Kysely compiled (table and columns from the report definition, quoted by Kysely); rows are streamed as data',
  },
  {
    file: 'src/warehouse/loading/multi-row-insert-writer.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw(inBatch === batchRows ? fullBatchSql : this.#insertSqlFor(trx, definition, columns, inBatch), parameters)',
    reason:
      're-runs the multi-row INSERT Kysely compiled once (compileInsert), or once per shorter row count for a batch ended early by long rows or the last of a slice, with fresh parameters: values are never in the text',
  },
  {
    file: 'src/warehouse/engine/reusable-statement.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw(this.#sql, parameters)',
    reason: 'SQL text compiled by Kysely once (from a query builder), values as parameters put back where Kysely placed them',
  },
  {
    file: 'src/warehouse/postgres/postgres-row-writer.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw(statement.sql, [new CopyFromStdin(copyTextChunks(rows, { batchRows, lineEnd, tally }))])',
    reason: 'the COPY statement Kysely compiled; its one parameter is the row stream, sent as COPY text data (copyTextRow escapes it)',
  },
  {
    file: 'src/warehouse/mysql/mysql-row-writer.ts',
    kind: 'raw-sql',
    code: 'CompiledQuery.raw(this.#loadSqlFor(trx, definition), [load])',
    reason: 'the LOAD DATA statement Kysely compiled once per table; its one parameter is the row stream, sent as the file’s COPY text data (copyTextRow escapes it)',
  },
  {
    file: 'src/warehouse/mysql/mysql-row-writer.ts',
    kind: 'raw-sql',
    code: "CompiledQuery.raw('do 0', [probe])",
    reason: 'constant text, never sent by a warehouse openWarehouse opened: its one parameter asks the connection whether it can load local files',
  },
  {
    file: 'src/warehouse/mysql/mysql-row-writer.ts',
    kind: 'sql-template',
    code: "sql`load data local infile 'slice-rows' into table ${sql.table(definition.table)}",
    reason: 'table and columns come from the report definition (code), quoted by Kysely; the file name and separators are constants; no data is interpolated',
  },
  {
    file: 'src/warehouse/mysql/mysql-row-writer.ts',
    kind: 'identifier',
    code: 'sql.table(definition.table)',
    reason: 'table name from the report definition (code), not from data',
  },
  {
    file: 'src/warehouse/mysql/mysql-row-writer.ts',
    kind: 'identifier',
    code: 'sql.ref(column)',
    reason: 'column names from the report definition (code), not from data',
  },
  { file: 'src/warehouse/mysql/run-load-data-local.ts', kind: 'driver-import', code: "'mysql2'", reason: 'types of the connection it runs LOAD DATA LOCAL INFILE on' },
  {
    file: 'src/warehouse/mysql/run-load-data-local.ts',
    kind: 'driver-call',
    code: 'connection.query({ sql, infileStreamFactory: () => file }',
    reason: 'runs the LOAD DATA statement Kysely compiled (table and columns from the report definition); rows are streamed as the file’s data',
  },
  {
    file: 'src/warehouse/mysql/run-load-data-local.ts',
    kind: 'driver-call',
    code: 'connection.query(FIRST_WARNINGS',
    reason: 'constant text: reads the warnings of a load that had any, to fail it naming them',
  },
  {
    file: 'src/warehouse/postgres/postgres-row-writer.ts',
    kind: 'sql-template',
    code: 'sql`copy ${sql.table(definition.table)}',
    reason: 'table and columns come from the report definition (code), quoted by Kysely; no data is interpolated',
  },
  {
    file: 'src/warehouse/postgres/postgres-row-writer.ts',
    kind: 'identifier',
    code: 'sql.table(definition.table)',
    reason: 'table name from the report definition (code), not from data',
  },
  {
    file: 'src/warehouse/postgres/postgres-row-writer.ts',
    kind: 'identifier',
    code: 'sql.ref(column)',
    reason: 'column names from the report definition (code), not from data',
  },
  {
    file: 'src/cli/demo-command.ts',
    kind: 'raw-sql',
    code: 'sql.raw(DEMO_QUERY)',
    reason: 'the demo’s example query: a constant in the source, no data',
  },
  {
    file: 'src/cli/demo-command.ts',
    kind: 'sql-template',
    code: '${sql.raw(DEMO_QUERY)}',
    reason: 'the template only wraps the constant demo query',
  },
];

const DRIVERS = new Set(['pg', 'better-sqlite3', 'better-sqlite3-napi', 'pg-copy-streams', 'pg-cursor', 'sqlite3', 'postgres', 'mysql2']);
const DRIVER_METHODS = new Set(['prepare', 'exec', 'query', 'pragma']);
const RAW_BUILDERS = new Set(['raw', 'lit']);
const IDENTIFIER_BUILDERS = new Set(['id', 'table', 'ref']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

function isSqlTag(node: ts.Expression): boolean {
  return ts.isIdentifier(node) && node.text === 'sql';
}

/** Text built at run time from pieces: a `+` with a string in it, or a template with interpolations. */
function isBuiltText(node: ts.Node): boolean {
  if (ts.isTemplateExpression(node)) return true;
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) return true;
  if (ts.isParenthesizedExpression(node)) return isBuiltText(node.expression);
  return false;
}

/** What a syntax node is, if it is one of the uses the allow-list must explain. */
function kindsOf(node: ts.Node): FindingKind[] {
  const kinds: FindingKind[] = [];
  if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && DRIVERS.has(node.moduleSpecifier.text)) kinds.push('driver-import');
  if (ts.isTaggedTemplateExpression(node) && isSqlTag(node.tag) && ts.isTemplateExpression(node.template)) kinds.push('sql-template');
  if (ts.isPropertyAccessExpression(node) && node.name.text === 'dynamic') kinds.push('identifier');
  if (!ts.isCallExpression(node)) return kinds;
  if (ts.isIdentifier(node.expression) && node.expression.text === 'require') {
    const [first] = node.arguments;
    if (first && ts.isStringLiteral(first) && DRIVERS.has(first.text)) kinds.push('driver-import');
  }
  if (!ts.isPropertyAccessExpression(node.expression)) return kinds;
  const { expression: receiver, name } = node.expression;
  const method = name.text;
  const rawBuilder = (isSqlTag(receiver) && RAW_BUILDERS.has(method)) || (ts.isIdentifier(receiver) && receiver.text === 'CompiledQuery' && method === 'raw');
  if (rawBuilder) kinds.push('raw-sql');
  if (isSqlTag(receiver) && IDENTIFIER_BUILDERS.has(method)) kinds.push('identifier');
  // RegExp#exec is not SQL: a regex literal, or a constant named in capitals as this code base names its patterns.
  const regexExec = method === 'exec' && (ts.isRegularExpressionLiteral(receiver) || (ts.isIdentifier(receiver) && /^[A-Z][A-Z0-9_]*$/.test(receiver.text)));
  const driverCall = DRIVER_METHODS.has(method) && !regexExec;
  if (driverCall) kinds.push('driver-call');
  if ((driverCall || rawBuilder) && node.arguments.some(isBuiltText)) kinds.push('concatenated-sql');
  return kinds;
}

function scanSource(text: string, file: string): Finding[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const findings: Finding[] = [];
  const visit = (node: ts.Node): void => {
    for (const kind of kindsOf(node)) {
      findings.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, kind, text: node.getText(source) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return findings;
}

function scan(file: string): Finding[] {
  return scanSource(readFileSync(file, 'utf8'), relative(ROOT, file));
}

describe('every SQL statement goes through Kysely with parameters', () => {
  const findings = ['src', 'jobs'].flatMap((dir) => sourceFiles(join(ROOT, dir))).flatMap(scan);
  const allowedFor = (finding: Finding) => ALLOWED.find((entry) => entry.file === finding.file && entry.kind === finding.kind && finding.text.includes(entry.code));

  it('finds the known uses (the scanner works)', () => {
    expect(findings.length).toBeGreaterThan(5);
    expect(findings.some((finding) => finding.kind === 'driver-import' && finding.file === 'src/warehouse/sqlite/sqlite-driver.ts')).toBe(true);
  });

  it('has no raw SQL, driver call, SQL built from strings or driver import outside the allow-list', () => {
    const unexplained = findings
      .filter((finding) => allowedFor(finding) === undefined)
      .map((finding) => `${finding.file}:${finding.line} ${finding.kind}: ${finding.text.replace(/\s+/g, ' ').slice(0, 160)}`);
    expect(unexplained, 'add a reason to ALLOWED only if no data can reach the SQL text').toEqual([]);
  });

  it('has no allow-list entry that matches nothing', () => {
    const stale = ALLOWED.filter((entry) => !findings.some((finding) => allowedFor(finding) === entry)).map((entry) => `${entry.file} ${entry.kind}: ${entry.code}`);
    expect(stale).toEqual([]);
  });

  it('flags what it should (the scanner is not blind)', () => {
    const kinds = scanSource(
      [
        "import Database from 'better-sqlite3';",
        'db.exec("DELETE FROM t WHERE id = " + id);',
        'sql.raw(`DELETE FROM ${table}`);',
        'await sql`select * from t where a = ${value}`.execute(db);',
        'client.query(`select ${column} from t`);',
        'CompiledQuery.raw(text, []);',
        'db.dynamic.ref(name);',
        'sql.id(name);',
        'const m = /x/.exec(text); const n = PATTERN.exec(text);',
      ].join('\n'),
      'probe.ts',
    ).map((finding) => finding.kind);
    expect(kinds).toEqual(expect.arrayContaining(['driver-import', 'driver-call', 'concatenated-sql', 'raw-sql', 'sql-template', 'identifier']));
    expect(kinds.filter((kind) => kind === 'driver-call')).toHaveLength(2); // db.exec and client.query, not the two RegExp#exec
  });
});

const DAY = '2024-05-06'; // a Monday
/** Text that breaks naive SQL, COPY text format, CSV and JSON handling. */
const HOSTILE_TEXT = [
  "'); DROP TABLE report_loads;--",
  'Robert"); DROP TABLE constituent_report; --',
  "quote ' double \" backslash \\ and \\' end\\",
  '\\N',
  '\\.',
  'tab\there',
  'line\nbreak and\r\ncrlf',
  '$1 $$ ? :name @p0 %s {0}',
  '-- comment /* open',
  '1; SELECT pg_sleep(10)',
  'Ünïcödé 💥 \u2028 \u{1F600}',
];
const HEADER = [
  'Effective Date',
  'ISIN',
  'Security Name',
  'Security Ticker',
  'Exchange Code',
  'Closing Price',
  'Currency',
  'Closing Fx',
  'Index Shares',
  'Index Weighting',
  "Note'); DROP TABLE index_report;--",
];

function csvField(value: string): string {
  return `"${value.replaceAll('"', '""')}"`;
}

describe.each(DIALECTS)('hostile text in a file round-trips verbatim into %s', (dialect) => {
  let rig: SyncRig;
  beforeAll(async () => {
    rig = await startSyncRig({ dialect, settings: { portfolios: [1001], reportTypes: ['index', 'constituent.close'] } });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('in CSV cells and JSON strings, keys and unknown fields, with every table intact', async () => {
    const lines = HOSTILE_TEXT.map((text, i) => [DAY, `XS${i}'--`, text, text, text, '1.5', text, '', '', '', text].map(csvField).join(','));
    const csv = `${HEADER.map(csvField).join(',')}\r\n${lines.join('\r\n')}\r\n`;
    rig.simulator.script(1001, 'constituent.close', DAY, [
      {
        status: 200,
        body: await makeZip({ "x'; DROP TABLE report_loads;--.csv": csv }),
        headers: { 'Content-Type': 'application/zip', 'Content-Disposition': 'attachment; filename="a\'); DROP TABLE report_loads;--.zip"' },
      },
    ]);
    const records = HOSTILE_TEXT.map((text, i) => ({
      effectiveDate: DAY,
      indexId: `${text} #${i}`,
      indexName: text,
      currency: text,
      [`weird"); DROP TABLE index_report;-- ${i}`]: { nested: text, list: [text] },
    }));
    rig.simulator.script(1001, 'index', DAY, [{ status: 200, body: JSON.stringify(records), headers: { 'Content-Type': 'application/json' } }]);

    const result = await rig.cli(['run', '--from', DAY, '--to', DAY]);
    expect(result.code, result.stdout).toBe(0);

    const { db } = await rig.warehouse();
    const constituents = await db.selectFrom('constituent_report').selectAll().where('report_date', '=', DAY).orderBy('line_number').execute();
    expect(constituents.map((row) => [row.isin, row.security_name, row.security_ticker, row.exchange_code, row.currency])).toEqual(
      HOSTILE_TEXT.map((text, i) => [`XS${i}'--`, text, text, text, text]),
    );
    expect(constituents.map((row) => JSON.parse(row.extra ?? 'null'))).toEqual(HOSTILE_TEXT.map((text) => ({ [HEADER[10]!]: text })));

    const indexes = await db.selectFrom('index_report').selectAll().where('report_date', '=', DAY).execute();
    const byId = new Map(indexes.map((row) => [row.index_id, row]));
    HOSTILE_TEXT.forEach((text, i) => {
      const row = byId.get(`${text} #${i}`);
      expect(row, `index ${i}`).toBeDefined();
      expect([row!.index_name, row!.currency]).toEqual([text, text]);
      expect(JSON.parse(row!.extra ?? 'null')).toEqual({ [`weird"); DROP TABLE index_report;-- ${i}`]: { nested: text, list: [text] } });
    });

    // The tables are all there, and the ledger holds both slices as loaded, file name verbatim.
    const ledger = await db.selectFrom('report_loads').select(['report_type', 'status', 'row_count', 'file_name']).orderBy('report_type').execute();
    expect(ledger).toEqual([
      { report_type: 'constituent.close', status: 'loaded', row_count: HOSTILE_TEXT.length, file_name: "a'); DROP TABLE report_loads;--.zip" },
      { report_type: 'index', status: 'loaded', row_count: HOSTILE_TEXT.length, file_name: null },
    ]);
  });
});
