import { describe, expect, it } from 'vitest';
import { HEAP_SETTINGS, heapOptionsToAdd, restartWithHeapSettings, type RestartableProcess } from '../../../src/runtime/heap-settings.js';

const OURS = HEAP_SETTINGS.map((setting) => `--${setting.flag}=${setting.megabytes}`);

/** A process Node gave its usual heap limit on a machine with memory to spare (4 GB and more). */
const ROOMY_MB = 4288;

const added = (execArgv: string[], nodeOptions?: string, heapLimitMb = ROOMY_MB) => heapOptionsToAdd({ execArgv, nodeOptions, heapLimitMb });

describe('heapOptionsToAdd', () => {
  it('adds every heap setting to a process started with none, whatever else it was given', () => {
    expect(added([])).toEqual(OURS);
    expect(added(['--enable-source-maps'], '--import ./preload.mjs --no-warnings')).toEqual(OURS);
  });

  it("keeps the user's own value of a setting, from the command line or NODE_OPTIONS, in either spelling", () => {
    expect(added(['--max-old-space-size=4096'])).toEqual(['--max-semi-space-size=16']);
    expect(added([], '--max_old_space_size=4096')).toEqual(['--max-semi-space-size=16']);
    expect(added([], '  --max-semi-space-size=64   --import x ')).toEqual(['--max-old-space-size=1536']);
  });

  it("caps the old generation only below Node's own limit: a small container keeps the heap Node sized to it", () => {
    expect(added([], undefined, 1024)).toEqual(['--max-semi-space-size=16']);
    expect(added([], undefined, 1536)).toEqual(['--max-semi-space-size=16']);
    // The ordinary neighbour: a limit just above the cap is lowered to it.
    expect(added([], undefined, 1600)).toEqual(OURS);
  });

  it('adds nothing under a debugger, which a restart would cut off', () => {
    expect(added(['--inspect-brk'])).toEqual([]);
    expect(added([], '--inspect=0.0.0.0:9229')).toEqual([]);
    // An option that only looks alike is no debugger.
    expect(added(['--no-experimental-inspector-network'])).toEqual(OURS);
  });

  it('adds nothing once every setting is there, so the restarted process does not restart again', () => {
    expect(added(OURS)).toEqual([]);
    expect(added(['--max-semi-space-size=8'], '--max-old-space-size=900')).toEqual([]);
  });
});

/** A process as `restartWithHeapSettings` sees it, recording what it did. */
function fakeProcess(overrides: Partial<RestartableProcess> = {}) {
  const calls: { file: string; args: readonly string[]; env: NodeJS.ProcessEnv }[] = [];
  let stderr = '';
  const host: RestartableProcess = {
    execve: (file, args, env) => {
      calls.push({ file, args, env });
      return undefined as never;
    },
    execPath: '/usr/bin/node',
    execArgv: ['--enable-source-maps'],
    argv: ['/usr/bin/node', '/app/dist/src/cli/bin.js', 'worker', '--concurrency', '8'],
    env: { DATABASE_URL: 'postgres://warehouse' },
    stderr: { write: (text: string) => (stderr += text) },
    ...overrides,
  };
  return { host, calls, stderr: () => stderr };
}

describe('restartWithHeapSettings', () => {
  it('restarts the same command with the heap settings first, its own options and arguments after, and the same environment', () => {
    const fake = fakeProcess();
    restartWithHeapSettings(fake.host, ROOMY_MB);
    expect(fake.calls).toEqual([
      {
        file: '/usr/bin/node',
        args: ['/usr/bin/node', ...OURS, '--enable-source-maps', '/app/dist/src/cli/bin.js', 'worker', '--concurrency', '8'],
        env: { DATABASE_URL: 'postgres://warehouse' },
      },
    ]);
    expect(fake.stderr()).toBe('');
  });

  it('goes on as it is where Node cannot restart a process (Node 20, Windows), saying nothing', () => {
    const fake = fakeProcess({ execve: undefined });
    restartWithHeapSettings(fake.host, ROOMY_MB);
    expect(fake.calls).toEqual([]);
    expect(fake.stderr()).toBe('');
  });

  it('does not restart a process that has the settings already', () => {
    const fake = fakeProcess({ execArgv: [...OURS, '--enable-source-maps'] });
    restartWithHeapSettings(fake.host, ROOMY_MB);
    expect(fake.calls).toEqual([]);
  });

  it("goes on with Node's own sizes, saying so in one line, when the restart fails", () => {
    const fake = fakeProcess({
      execve: () => {
        throw Object.assign(new Error('execve failed: E2BIG'), { code: 'E2BIG' });
      },
    });
    expect(() => restartWithHeapSettings(fake.host, ROOMY_MB)).not.toThrow();
    expect(fake.stderr()).toBe("report-sync: could not restart Node.js with its heap settings (execve failed: E2BIG); going on with Node's own\n");
  });
});
