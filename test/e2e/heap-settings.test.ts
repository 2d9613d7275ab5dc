import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HEAP_SETTINGS, heapOptionsToAdd } from '../../src/runtime/heap-settings.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { packageVersion } from '../../src/runtime/package-version.js';

/**
 * The compiled command restarts itself under its heap settings where Node can (`process.execve`,
 * Node 22.15 on), and runs as it is on Node 20. This runs on whichever line runs the tests (CI:
 * Node 20; `npm run test:node-lines -- 22 24 26` with NODE_LINES_TIERS=e2e the others).
 */

const scratch = mkdtempSync(join(tmpdir(), 'report-sync-heap-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// Loaded into every Node start of the command: says which process it is, its options and heap limit.
const preload = join(scratch, 'say-heap.mjs');
writeFileSync(
  preload,
  "import v8 from 'node:v8';\nprocess.stderr.write(`heap ${JSON.stringify({ pid: process.pid, execArgv: process.execArgv, limitMb: v8.getHeapStatistics().heap_size_limit / 2 ** 20 })}\\n`);\n",
);

interface Start {
  readonly pid: number;
  readonly execArgv: string[];
  readonly limitMb: number;
}

async function versionStarts(nodeOptions: string) {
  const cli = startCliProcess(['--version'], { cwd: scratch, env: { NODE_OPTIONS: `--import ${preload} ${nodeOptions}` } });
  const exit = await cli.exited;
  const starts = [...cli.output().matchAll(/^heap (.+)$/gm)].map((match) => JSON.parse(match[1]!) as Start);
  return { exit, stdout: cli.stdout(), starts, output: cli.output() };
}

const CAN_RESTART = typeof (process as { execve?: unknown }).execve === 'function';
const OLD_SPACE_MB = HEAP_SETTINGS.find((setting) => setting.flag === 'max-old-space-size')!.megabytes;

/** How Node starts a plain process on this machine, with the same preload: its own heap limit. */
function plainStart(): Start {
  const plain = spawnSync(process.execPath, ['-e', '0'], { env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: `--import ${preload}` }, encoding: 'utf8' });
  return JSON.parse(/^heap (.+)$/m.exec(plain.stderr)![1]!) as Start;
}

describe(`the command's heap settings (Node ${process.version}, ${CAN_RESTART ? 'which can' : 'which cannot'} restart a process)`, () => {
  it(CAN_RESTART ? 'runs under them, restarted once in the same process' : "runs as it is, with Node's own sizes", async () => {
    const plain = plainStart();
    // On a machine with little memory Node's own limit is below the cap, which is then left out.
    const expected = CAN_RESTART ? heapOptionsToAdd({ execArgv: [], nodeOptions: `--import ${preload}`, heapLimitMb: plain.limitMb }) : [];
    const run = await versionStarts('');
    expect(run.exit, run.output).toBe(0);
    expect(run.stdout).toBe(`${packageVersion()}\n`);
    if (CAN_RESTART) {
      expect(expected).toContain('--max-semi-space-size=16');
      expect(run.starts, run.output).toHaveLength(2);
      expect(run.starts[1]!.pid).toBe(run.starts[0]!.pid);
      expect(run.starts[1]!.execArgv).toEqual(expected);
      expect(run.starts[1]!.limitMb).toBeLessThanOrEqual(Math.max(plain.limitMb, OLD_SPACE_MB + 200));
      if (expected.includes(`--max-old-space-size=${OLD_SPACE_MB}`)) expect(run.starts[1]!.limitMb).toBeLessThan(OLD_SPACE_MB + 200);
    } else {
      expect(run.starts, run.output).toHaveLength(1);
      expect(run.starts[0]!.execArgv).toEqual([]);
      expect(run.starts[0]!.limitMb).toBe(plain.limitMb);
    }
  });

  it("keeps a user's own heap size from NODE_OPTIONS", async () => {
    const run = await versionStarts('--max-old-space-size=3000');
    expect(run.exit, run.output).toBe(0);
    const last = run.starts.at(-1)!;
    expect(last.execArgv).toEqual(CAN_RESTART ? ['--max-semi-space-size=16'] : []);
    expect(last.limitMb).toBeGreaterThanOrEqual(3000);
  });
});
