// Loaded with `node --import` into a measured child process: at exit, writes the process's own
// peak resident set size (bytes) to the file named by BENCH_PEAK_RSS_FILE.
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_PEAK_RSS_FILE;
if (file) {
  process.on('exit', () => {
    // resourceUsage().maxRSS is in kilobytes.
    writeFileSync(file, String(process.resourceUsage().maxRSS * 1024));
  });
}
