// Loaded with `node --import` into a measured child process: at exit, writes the process's own
// peak resident set size (bytes) and CPU time (ms, user + system) to BENCH_PEAK_RSS_FILE as JSON.
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_PEAK_RSS_FILE;
if (file) {
  process.on('exit', () => {
    const usage = process.resourceUsage();
    // maxRSS is in kilobytes, CPU times in microseconds.
    writeFileSync(file, JSON.stringify({ peakRssBytes: usage.maxRSS * 1024, cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000 }));
  });
}
