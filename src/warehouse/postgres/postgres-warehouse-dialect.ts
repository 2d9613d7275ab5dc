import { PostgresAdapter, PostgresDialect, type DialectAdapter } from 'kysely';

/**
 * Kysely's Postgres dialect, except that its migrator takes no lock of its own:
 * `migrateHoldingPostgresLock` holds one for it, as a transaction lock.
 *
 * Kysely's lock is a session lock (`pg_advisory_lock`) taken before the migrations' transaction and
 * released after it, three separate round trips. Behind PgBouncer in transaction pooling each may
 * reach a different server connection: the lock stays with an idle server connection (the unlock
 * reaches another one), and the next migrator handed that connection is granted it again at once,
 * so two processes migrate together and one fails on the tables the other is creating.
 */
export class PostgresWarehouseDialect extends PostgresDialect {
  override createAdapter(): DialectAdapter {
    return new LockFreeMigrationsAdapter();
  }
}

class LockFreeMigrationsAdapter extends PostgresAdapter {
  override async acquireMigrationLock(): Promise<void> {}
  // Also what keeps a failed migration's own error: an unlock in the aborted transaction would replace it.
  override async releaseMigrationLock(): Promise<void> {}
}
