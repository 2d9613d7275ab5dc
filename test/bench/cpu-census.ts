import { readdirSync, readFileSync } from 'node:fs';

/** CPU time, in ms, spent by the machine and by the processes a benchmark cares about. */
export interface CpuCensus {
  /** Busy time of all cores together (user, nice, system, irq, softirq, steal). */
  readonly machineBusyMs: number;
  /** Idle time of all cores together (idle, iowait). */
  readonly machineIdleMs: number;
  /** Per group of processes (by command name), user + system time. */
  readonly groups: Readonly<Record<string, number>>;
}

/** Clock ticks per second of /proc's counters: 100 on every Linux this runs on. */
const TICK_MS = 10;

/**
 * What every core and the named processes have spent so far, read from /proc (Linux); all zero
 * elsewhere. Take one before and one after, and {@link describeCensus} the difference, to say what
 * the machine's cores did during a measurement: which process kept them busy, and how long they idled.
 * @param groups a name per group, and the command names (`/proc/<pid>/comm`) that belong to it
 */
export function takeCpuCensus(groups: Readonly<Record<string, readonly string[]>>): CpuCensus {
  let machineBusyMs = 0;
  let machineIdleMs = 0;
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
    machineBusyMs = (user + nice + system + irq + softirq + steal) * TICK_MS;
    machineIdleMs = (idle + iowait) * TICK_MS;
  } catch {
    // Not Linux: nothing to say.
  }
  const totals: Record<string, number> = Object.fromEntries(Object.keys(groups).map((name) => [name, 0]));
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    pids = [];
  }
  for (const pid of pids) {
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      const group = Object.keys(groups).find((name) => groups[name]!.includes(comm));
      if (group === undefined) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      totals[group]! += (Number(after[11]) + Number(after[12])) * TICK_MS;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return { machineBusyMs, machineIdleMs, groups: totals };
}

/**
 * The difference of two censuses over `durationMs`, as shares of one core: `machine busy 1.86 of 2
 * cores; postgres 0.61, redis 0.12, …`. Processes that started or ended in between count only
 * for the time they were seen, so a group's share is a lower bound.
 */
export function describeCensus(before: CpuCensus, after: CpuCensus, durationMs: number, cores: number, extra: Readonly<Record<string, number>> = {}): string {
  const share = (ms: number) => (ms / durationMs).toFixed(2);
  const busy = after.machineBusyMs - before.machineBusyMs;
  const parts = Object.keys(after.groups).map((name) => `${name} ${share(after.groups[name]! - (before.groups[name] ?? 0))}`);
  for (const [name, ms] of Object.entries(extra)) parts.push(`${name} ${share(ms)}`);
  return `cores busy ${share(busy)} of ${cores} (${parts.join(', ')})`;
}
