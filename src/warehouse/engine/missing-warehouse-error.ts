import { ConfigError, type SyncErrorOptions } from '../../errors/sync-error.js';

/**
 * `DATABASE_URL` names no warehouse yet: no SQLite file there, or a database without report-sync's
 * tables. A read-only command stops on it (exit 2, `CONFIG_INVALID`, as any ConfigError); a dry
 * run takes it to mean "nothing is held yet".
 */
export class MissingWarehouseError extends ConfigError {
  /** Where the warehouse was looked for, with no password (`sqlite:/abs/path`, `postgres://host/db`). */
  readonly location: string;

  constructor(location: string, message: string, options?: SyncErrorOptions) {
    super(message, options);
    this.location = location;
  }
}
