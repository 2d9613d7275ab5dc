// Loaded with `node --import` into a measured child process: at exit, writes the process's own
// peak resident set size (bytes) and CPU time (ms, user + system) to BENCH_PEAK_RSS_FILE as JSON.
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.env.BENCH_PEAK_RSS_FILE;
if (file) {
  process.on('exit', () => {
    const usage = process.resourceUsage();
    // CPU times are in microseconds.
    writeFileSync(file, JSON.stringify({ peakRssBytes: ownPeakRssBytes(usage), cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000 }));
  });
}

/** As `ownPeakRssBytes` in own-peak-rss.ts (see there why not maxRSS alone). */
function ownPeakRssBytes(usage) {
  try {
    const kilobytes = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kilobytes !== undefined) return Number(kilobytes) * 1024;
  } catch {
    // Not Linux: maxRSS below.
  }
  return usage.maxRSS * 1024;
}
