import { getHeapStatistics } from 'node:v8';

/**
 * The sizes of V8's heap report-sync runs with, whatever the Node.js line. From Node 22 on, V8
 * lets a busy process's young generation grow well past Node 20's, and its old generation further
 * before a full collection, so the same work peaks higher: past the memory ceilings the tests hold
 * (see docs/performance.md). Node 20's young generation and a cap on the old one bring the newer
 * lines back under them; the cap is several times the most any command was measured to hold.
 */
export const HEAP_SETTINGS: readonly HeapSetting[] = [
  { flag: 'max-semi-space-size', megabytes: 16 },
  { flag: 'max-old-space-size', megabytes: 1536, onlyBelowNodes: true },
];

export interface HeapSetting {
  /** The Node.js option, without its dashes. */
  readonly flag: string;
  readonly megabytes: number;
  /**
   * Set only when Node's own heap limit is higher: on a machine or container with little memory
   * Node sizes the heap to it, and a cap above that would let the heap outgrow the memory.
   */
  readonly onlyBelowNodes?: boolean;
}

/** How a process was started, as {@link heapOptionsToAdd} reads it. */
export interface ProcessStart {
  readonly execArgv: readonly string[];
  readonly nodeOptions: string | undefined;
  /** The heap limit Node chose for this process (`v8.getHeapStatistics().heap_size_limit`), in MB. */
  readonly heapLimitMb: number;
}

/**
 * The heap options to add to a process: each of {@link HEAP_SETTINGS} the user has not set on the
 * command line or in `NODE_OPTIONS` (their value wins), and the old generation's cap only below
 * Node's own limit; none once all are set. None either under a debugger (`--inspect`,
 * `--inspect-brk`…): a restart would cut off the one attached to the first start.
 */
export function heapOptionsToAdd(start: ProcessStart): string[] {
  const given = [...start.execArgv, ...(start.nodeOptions ?? '').split(/\s+/)].map(optionName);
  if (given.some((name) => name?.startsWith('inspect'))) return [];
  return HEAP_SETTINGS.filter((setting) => !given.includes(setting.flag) && !(setting.onlyBelowNodes && start.heapLimitMb <= setting.megabytes)).map(
    (setting) => `--${setting.flag}=${setting.megabytes}`,
  );
}

/** `--max_old_space_size=512` → `max-old-space-size`: V8 takes either spelling. */
function optionName(option: string): string | undefined {
  if (!option.startsWith('--')) return undefined;
  return option.slice(2).split('=')[0]!.replaceAll('_', '-');
}

/** What {@link restartWithHeapSettings} needs of the process: `process` itself but in tests. */
export interface RestartableProcess {
  /** `process.execve`: Node 22.15 and 23.11 on, not on Windows. */
  readonly execve?: (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => never;
  readonly execPath: string;
  readonly execArgv: readonly string[];
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly stderr: { write(text: string): unknown };
}

/**
 * Replaces this process with the same command under {@link HEAP_SETTINGS} (same process id,
 * standard streams and signals), when it runs without them and Node can (`process.execve`):
 * V8 reads them only as it starts. Where it cannot (Node 20, Windows), Node's own sizes stand;
 * Node 20's young generation is already the one above. Called first thing by the command, before
 * it has loaded or written anything.
 */
export function restartWithHeapSettings(host: RestartableProcess = process as RestartableProcess, heapLimitMb = getHeapStatistics().heap_size_limit / 2 ** 20): void {
  if (typeof host.execve !== 'function') return;
  const options = heapOptionsToAdd({ execArgv: host.execArgv, nodeOptions: host.env.NODE_OPTIONS, heapLimitMb });
  if (options.length === 0) return;
  try {
    host.execve(host.execPath, [host.execPath, ...options, ...host.execArgv, ...host.argv.slice(1)], host.env);
  } catch (error) {
    host.stderr.write(`report-sync: could not restart Node.js with its heap settings (${(error as Error).message}); going on with Node's own\n`);
  }
}
