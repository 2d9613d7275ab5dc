import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);

/** The package better-sqlite3 is loaded from on a Node.js of `nodeVersion` (`24.21.0`): 13 from Node 22 on, 12 on Node 20. */
export function sqliteDriverPackage(nodeVersion: string): 'better-sqlite3' | 'better-sqlite3-napi' {
  return Number(nodeVersion.split('.')[0]) >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3';
}

/** The package better-sqlite3 is loaded from on the Node.js running. */
export const SQLITE_DRIVER_PACKAGE = sqliteDriverPackage(process.versions.node);

/**
 * better-sqlite3 for the Node.js running. 12's addon derives from `node::ObjectWrap`, whose
 * destructor aborts the process on Node 24.19 and later when the garbage collector frees a
 * statement outside JavaScript (nodejs/node#65446), so any process holding a SQLite warehouse
 * could die at a random moment. 13 is a Node-API addon without that fault, but does not run on
 * Node 20, which keeps 12 (`better-sqlite3-napi` is 13 under another name). Same API.
 */
export const Database: typeof BetterSqlite3 = SQLITE_DRIVER_PACKAGE === 'better-sqlite3-napi' ? require('better-sqlite3-napi') : require('better-sqlite3');

/** An open SQLite database, whichever package opened it. */
export type SqliteConnection = BetterSqlite3.Database;

/** A prepared statement of a {@link SqliteConnection}. */
export type SqliteStatement = BetterSqlite3.Statement;
