import { readFileSync } from 'node:fs';

/**
 * The peak of this process's own resident memory, in bytes: Linux's VmHWM. getrusage's maxRSS is
 * kept across exec, so a child spawned by a big parent reports the parent's size at the fork
 * instead (a 40 MB child of a 300 MB parent says 311 MB); it is the answer only where /proc is
 * missing. `peak-rss-preload.mjs` reads it the same way (a preload cannot load TypeScript).
 */
export function ownPeakRssBytes(): number {
  try {
    const kilobytes = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kilobytes !== undefined) return Number(kilobytes) * 1024;
  } catch {
    // Not Linux: maxRSS below.
  }
  return process.resourceUsage().maxRSS * 1024;
}
