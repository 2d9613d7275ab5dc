import { ConfigError } from '../errors/sync-error.js';
import { describeUrl } from '../redaction/redact.js';
import { engineForUrl, WAREHOUSE_ENGINES } from './engines.js';
import type { OpenWarehouseOptions, WarehouseHandle } from './engine/warehouse-engine.js';

// The handle and the options are the engine's vocabulary (engine/), also said here for openWarehouse's callers.

/** The name of a warehouse dialect, as its engine gives it (see `WarehouseEngine.dialect`). */
export type WarehouseDialect = (typeof WAREHOUSE_ENGINES)[number]['dialect'];

/**
 * Opens the warehouse named by a `DATABASE_URL` with the engine whose scheme it has (see
 * `WAREHOUSE_ENGINES`): `sqlite:<path>` (`sqlite::memory:` for a throw-away one) or
 * `postgres://user[:password]@host[:port]/database`.
 */
export async function openWarehouse(databaseUrl: string, options: OpenWarehouseOptions = {}): Promise<WarehouseHandle> {
  const engine = engineForUrl(databaseUrl);
  if (engine === undefined) {
    // Shown with its password redacted, so that a typo (one slash, no scheme) can be seen.
    const shown = describeUrl(databaseUrl);
    const examples = WAREHOUSE_ENGINES.map((known) => known.example).join(' or ');
    throw new ConfigError(`DATABASE_URL${shown ? ` (${shown})` : ''} must look like ${examples}`);
  }
  return { ...(await engine.open(databaseUrl, options)), engine };
}
