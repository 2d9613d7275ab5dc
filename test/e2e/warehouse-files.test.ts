import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { capturedIo } from '../helpers/captured-io.js';
import { startCliProcess } from '../helpers/cli-process.js';

/*
 * A new SQLite warehouse is private by default (the spooled bodies are too), and a data directory
 * that cannot be written is said as such, with exit 2 and the variable to change, not a stack trace.
 */

const mode = (path: string) => statSync(path).mode & 0o777;

describe('the SQLite warehouse on disk', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  async function migrate(databaseUrl: string, settings?: object) {
    dir ??= mkdtempSync(join(tmpdir(), 'report-sync-files-'));
    if (settings) {
      rmSync(join(dir, 'config'), { recursive: true, force: true });
      mkdirSync(join(dir, 'config'));
      writeFileSync(join(dir, 'config/default.json'), JSON.stringify(settings));
    }
    const io = capturedIo({ DATABASE_URL: databaseUrl }, dir);
    const code = await main(['migrate'], io);
    return { code, stdout: io.stdout.text, stderr: io.stderr.text };
  }

  it('creates the file readable by its owner only, in a directory only its owner can enter', async () => {
    const result = await migrate('sqlite:./data/warehouse.sqlite');
    expect(result.code, result.stderr).toBe(0);
    expect(mode(join(dir!, 'data'))).toBe(0o700);
    expect(mode(join(dir!, 'data/warehouse.sqlite'))).toBe(0o600);
  });

  it('creates them with warehouse.sqliteFileMode when a team needs to share the file, and leaves an existing file as it is', async () => {
    const result = await migrate('sqlite:./shared/warehouse.sqlite', { warehouse: { sqliteFileMode: '640' } });
    expect(result.code, result.stderr).toBe(0);
    expect(mode(join(dir!, 'shared'))).toBe(0o750);
    expect(mode(join(dir!, 'shared/warehouse.sqlite'))).toBe(0o640);
    const again = await migrate('sqlite:./shared/warehouse.sqlite', { warehouse: { sqliteFileMode: '600' } });
    expect(again.code).toBe(0);
    expect(mode(join(dir!, 'shared/warehouse.sqlite'))).toBe(0o640);
  });

  it('refuses a mode that is not octal, naming the setting', async () => {
    const result = await migrate('sqlite:./data/warehouse.sqlite', { warehouse: { sqliteFileMode: 'rw-------' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('warehouse.sqliteFileMode');
  });

  it('creates every missing level of a nested new directory with the mode of warehouse.sqliteFileMode', async () => {
    const result = await migrate('sqlite:./data/a/b/warehouse.sqlite', { warehouse: { sqliteFileMode: '640' } });
    expect(result.code, result.stderr).toBe(0);
    for (const level of ['data', 'data/a', 'data/a/b']) expect(mode(join(dir!, level)), level).toBe(0o750);
    expect(mode(join(dir!, 'data/a/b/warehouse.sqlite'))).toBe(0o640);
  });

  it('says a data directory it cannot make or write is local trouble (exit 2, DATABASE_URL), without a stack trace', async () => {
    dir = mkdtempSync(join(tmpdir(), 'report-sync-files-'));
    writeFileSync(join(dir, 'not-a-directory'), 'x');
    // A path through a file fails for every user, root included.
    for (const url of ['sqlite:./not-a-directory/warehouse.sqlite', 'sqlite:./not-a-directory/deeper/warehouse.sqlite']) {
      const result = await migrate(url);
      expect(result.code, url).toBe(2);
      expect(result.stderr).toMatch(
        /^report-sync: cannot create or open the SQLite warehouse .* \(a part of the path is a file, not a directory, ENOTDIR\): make its directory writable by this user \(or free space there\), or point DATABASE_URL at a writable place\n$/,
      );
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it.each(['/proc/report-sync-nope/warehouse.sqlite', '/proc/warehouse.sqlite', '/sys/report-sync/warehouse.sqlite'])(
    'refuses a path on a kernel filesystem (%s) at once with exit 2, naming it and DATABASE_URL',
    async (path) => {
      // A process of its own: Node's recursive mkdir under /proc never returned, at full CPU and deaf
      // to signals, and would have held this test's process with it.
      dir = mkdtempSync(join(tmpdir(), 'report-sync-files-'));
      const startedAt = Date.now();
      const migrate = startCliProcess(['migrate'], { cwd: dir, env: { DATABASE_URL: `sqlite:${path}` } });
      const killer = setTimeout(() => migrate.child.kill('SIGKILL'), 20_000);
      const exit = await migrate.exited;
      clearTimeout(killer);
      expect(exit, migrate.output()).toBe(2);
      // Node's own start-up is most of this on a loaded machine.
      expect(Date.now() - startedAt).toBeLessThan(8_000);
      const filesystem = path.startsWith('/proc') ? 'proc' : 'sysfs';
      expect(migrate.output()).toBe(
        `report-sync: cannot create or open the SQLite warehouse ${path} (/${filesystem === 'proc' ? 'proc' : 'sys'} is on the kernel's ${filesystem} filesystem, which holds no files): ` +
          'point DATABASE_URL at a directory on a disk, such as sqlite:./data/warehouse.sqlite\n',
      );
    },
  );
});
