/**
 * SQLite's clock (see `warehouseNow`): the clock of the machine the file is on, the only one its
 * processes can share. Every process writing the file runs on that machine (WAL mode needs memory
 * shared between them, so no network file system), so that clock is this process's own: read
 * here rather than asked of SQLite (`strftime('now')` reads the same clock), which cost a
 * statement under every slice's lock.
 */
export async function sqliteNow(): Promise<string> {
  return new Date().toISOString();
}
