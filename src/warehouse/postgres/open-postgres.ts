import { Kysely } from 'kysely';
import pg from 'pg';
import { ConfigError } from '../../errors/sync-error.js';
import { describeUrl } from '../../redaction/redact.js';
import type { Warehouse } from '../engine/warehouse-schema.js';
import type { OpenedWarehouse, OpenWarehouseOptions } from '../engine/warehouse-engine.js';
import { copyingPostgresPool } from './copying-postgres-pool.js';
import { PostgresSliceLock } from './postgres-slice-lock.js';
import { checkPostgresTls } from './postgres-tls.js';
import { PostgresWarehouseDialect } from './postgres-warehouse-dialect.js';

/**
 * Postgres hands DATE and TIMESTAMPTZ to JavaScript as Date objects in the local zone, BIGINT as
 * text, and JSONB parsed. The warehouse wants report dates as the YYYY-MM-DD they are, times as
 * ISO 8601 UTC, and counts as numbers; NUMERIC stays text so no digit is lost, and so does `extra`
 * (JSONB): JSON.parse would round its decimals to doubles, and SQLite hands it as text too.
 * Set per pool, not globally.
 */
const POSTGRES_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    switch (oid) {
      case pg.types.builtins.DATE:
        return (text: string) => text;
      case pg.types.builtins.TIMESTAMPTZ:
      case pg.types.builtins.TIMESTAMP:
        return toIsoTimestamp;
      case pg.types.builtins.INT8:
        return (text: string) => Number(text);
      case pg.types.builtins.JSONB:
      case pg.types.builtins.JSON:
        return (text: string) => text;
      default:
        return pg.types.getTypeParser(oid, format);
    }
  },
} as pg.CustomTypesConfig;

/** `2026-11-22 14:00:00.123+01` (Postgres text) → `2026-11-22T13:00:00.123Z`. */
function toIsoTimestamp(text: string): string {
  const iso = text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
  const date = new Date(/[zZ]|[+-]\d\d:\d\d$/.test(iso) ? iso : `${iso}Z`);
  return Number.isNaN(date.getTime()) ? text : date.toISOString();
}

/** Opens the Postgres warehouse of a `postgres://user[:password]@host[:port]/database` URL, as a pool. */
export function openPostgres(databaseUrl: string, options: OpenWarehouseOptions): OpenedWarehouse {
  const location = describeUrl(databaseUrl);
  if (location === undefined) throw new ConfigError('DATABASE_URL is not a valid postgres:// URL');
  checkPostgresTls(new URL(databaseUrl), location);
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    types: POSTGRES_TYPES,
    // pg waits for a connection forever by default: a blackholed host would hang a command.
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
  });
  // An idle client that loses its server (a Postgres restart) emits 'error' on the pool; without a
  // listener that would crash the process. The next query gets a fresh connection.
  pool.on('error', () => undefined);
  // pg-pool takes its own listener off a client while it is checked out, and Kysely adds none: a
  // server restart between two statements of a slice's transaction would then emit 'error' with no
  // listener and crash the process. The loss still reaches the transaction's next statement (the
  // client is no longer queryable), and the pool drops the client when it is released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  // The wrapper lets the row writer stream rows with COPY inside the slice's Kysely transaction.
  const db = new Kysely<Warehouse>({ dialect: new PostgresWarehouseDialect({ pool: copyingPostgresPool(pool) }) });
  return { db, sliceLock: new PostgresSliceLock(), location, close: () => db.destroy() };
}
