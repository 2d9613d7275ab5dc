import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { Database, SQLITE_DRIVER_PACKAGE, sqliteDriverPackage } from '../../../../src/warehouse/sqlite/sqlite-driver.js';

const require = createRequire(import.meta.url);

describe('the SQLite driver for the Node.js running', () => {
  it('takes better-sqlite3 13 (Node-API) from Node 22 on, and 12 on Node 20', () => {
    expect(sqliteDriverPackage('20.18.0')).toBe('better-sqlite3');
    expect(sqliteDriverPackage('20.20.2')).toBe('better-sqlite3');
    expect(sqliteDriverPackage('22.0.0')).toBe('better-sqlite3-napi');
    expect(sqliteDriverPackage('24.21.0')).toBe('better-sqlite3-napi');
    expect(sqliteDriverPackage('26.12.1')).toBe('better-sqlite3-napi');
  });

  it('loads that package here, and it opens a database and runs a statement', () => {
    const { version } = require(`${SQLITE_DRIVER_PACKAGE}/package.json`) as { version: string };
    expect(version.split('.')[0]).toBe(SQLITE_DRIVER_PACKAGE === 'better-sqlite3-napi' ? '13' : '12');
    const database = new Database(':memory:');
    try {
      database.exec('create table t (a integer)');
      database.prepare('insert into t (a) values (?)').run(41);
      expect(database.prepare('select a + 1 as b from t').get()).toEqual({ b: 42 });
    } finally {
      database.close();
    }
  });
});
