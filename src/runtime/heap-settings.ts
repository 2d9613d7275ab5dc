/**
 * The sizes of V8's heap report-sync runs with, whatever the Node.js line. From Node 22 on, V8
 * lets a busy process's young generation grow well past Node 20's, and its old generation further
 * before a full collection, so the same work peaks higher: past the memory ceilings the tests hold
 * (see docs/performance.md). Node 20's young generation and a cap on the old one bring the newer
 * lines back under them; the cap is several times the most any command was measured to hold.
 */
export const HEAP_SETTINGS: readonly HeapSetting[] = [
  { flag: 'max-semi-space-size', megabytes: 16 },
  { flag: 'max-old-space-size', megabytes: 1536 },
];

export interface HeapSetting {
  /** The Node.js option, without its dashes. */
  readonly flag: string;
  readonly megabytes: number;
}

/**
 * The heap options to add to a process started with `execArgv` and `NODE_OPTIONS`: each of
 * {@link HEAP_SETTINGS} the user has not set there (their value wins), none once all are set.
 * None either under a debugger (`--inspect`, `--inspect-brk`…): a restart would cut off the one
 * attached to the first start.
 */
export function heapOptionsToAdd(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].map(optionName);
  if (given.some((name) => name?.startsWith('inspect'))) return [];
  return HEAP_SETTINGS.filter((setting) => !given.includes(setting.flag)).map((setting) => `--${setting.flag}=${setting.megabytes}`);
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
export function restartWithHeapSettings(host: RestartableProcess = process as RestartableProcess): void {
  if (typeof host.execve !== 'function') return;
  const options = heapOptionsToAdd(host.execArgv, host.env.NODE_OPTIONS);
  if (options.length === 0) return;
  try {
    host.execve(host.execPath, [host.execPath, ...options, ...host.execArgv, ...host.argv.slice(1)], host.env);
  } catch (error) {
    host.stderr.write(`report-sync: could not restart Node.js with its heap settings (${(error as Error).message}); going on with Node's own\n`);
  }
}
