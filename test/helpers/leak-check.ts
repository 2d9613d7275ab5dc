import { readdirSync, readFileSync } from 'node:fs';

/** What keeps a process alive: its event loop's resources by type, and its running child processes. */
export interface ResourceSnapshot {
  /** `process.getActiveResourcesInfo()` counted by type (`TCPServerWrap: 1`, `Timeout: 2`). */
  readonly resources: ReadonlyMap<string, number>;
  /** Running (not zombie) child processes of this process: pid to command line. */
  readonly children: ReadonlyMap<number, string>;
}

/** What each resource type usually is, for a message that says what to close. */
const MEANING: Record<string, string> = {
  TCPServerWrap: 'a TCP server still listening (close it)',
  TCPSocketWrap: 'a TCP socket still open (a client, pool or connection not closed)',
  PipeServerWrap: 'a Unix-socket server still listening',
  PipeWrap: 'a pipe or Unix socket still open (often a child process’s stdio)',
  ProcessWrap: 'a child process handle (the process was not killed, or its exit not awaited)',
  Timeout: 'a timer or interval never cleared',
  Immediate: 'a setImmediate still pending',
  UDPWrap: 'a UDP socket',
  FSEventWrap: 'a file watcher',
  StatWatcher: 'a file watcher (fs.watchFile)',
  SignalWrap: 'a signal listener',
  FileHandle: 'a file handle never closed',
};

/** The resources and children of this process now. */
export function takeResourceSnapshot(): ResourceSnapshot {
  const resources = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) resources.set(type, (resources.get(type) ?? 0) + 1);
  return { resources, children: runningChildren(process.pid) };
}

/**
 * A snapshot to compare against, taken once no timer is pending (vitest's runner keeps short
 * timers of its own now and then, which would otherwise hide a leaked one), or, after `maxWaitMs`,
 * the one with the fewest timers seen.
 */
export async function takeSettledSnapshot(maxWaitMs: number): Promise<ResourceSnapshot> {
  const deadline = Date.now() + maxWaitMs;
  let best = takeResourceSnapshot();
  while (timers(best) > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const now = takeResourceSnapshot();
    if (timers(now) < timers(best)) best = now;
  }
  return best;
}

function timers(snapshot: ResourceSnapshot): number {
  return (snapshot.resources.get('Timeout') ?? 0) + (snapshot.resources.get('Immediate') ?? 0);
}

/**
 * What is alive now that was not in `before`: one line per resource type that grew and per child
 * process started since, or none. Things that end on their own (a socket closing after its server,
 * a child exiting after SIGTERM) are given `waitMs` to go, checked every 50 ms, before they count.
 */
export async function findLeftovers(before: ResourceSnapshot, waitMs: number): Promise<string[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const leftovers = compare(before, takeResourceSnapshot());
    if (leftovers.length === 0 || Date.now() >= deadline) return leftovers;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function compare(before: ResourceSnapshot, after: ResourceSnapshot): string[] {
  const lines: string[] = [];
  for (const [type, count] of [...after.resources].sort(([a], [b]) => a.localeCompare(b))) {
    const more = count - (before.resources.get(type) ?? 0);
    if (more > 0) lines.push(`${more} × ${type}: ${MEANING[type] ?? 'a resource that keeps the event loop alive'}`);
  }
  for (const [pid, command] of after.children) {
    if (!before.children.has(pid)) lines.push(`child process ${pid} still running: ${command}`);
  }
  return lines;
}

/** The running children of `pid`, from /proc (Linux): every thread's `children` file, zombies left out. */
export function runningChildren(pid: number): Map<number, string> {
  const children = new Map<number, string>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const listed = readIfThere(`/proc/${pid}/task/${task}/children`) ?? '';
    for (const child of listed.split(' ').filter(Boolean).map(Number)) {
      const stat = readIfThere(`/proc/${child}/stat`);
      // The state follows the command, which is in parentheses and may itself hold spaces.
      const state = stat?.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (stat === undefined || state === 'Z' || state === 'X') continue;
      const command = (readIfThere(`/proc/${child}/cmdline`) ?? '').split('\0').filter(Boolean).join(' ');
      children.set(child, command.length > 200 ? `${command.slice(0, 200)}…` : command);
    }
  }
  return children;
}

/** A /proc file's text, or undefined when it has gone (the thread or process ended meanwhile). */
function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
