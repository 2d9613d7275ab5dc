// Loaded with `node --import` into a `report-sync` process whose peak memory a test measures: as the
// process exits, the kernel's high-water mark of its resident memory (VmHWM: the most it ever held,
// every thread included) is written, in kB, to REPORT_SYNC_TEST_PEAK_RSS_FILE. A process that dies
// without exiting (out of memory, a signal) writes nothing.
import { readFileSync, writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.REPORT_SYNC_TEST_PEAK_RSS_FILE;
if (file && isMainThread) {
  process.on('exit', () => {
    const peak = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (peak) writeFileSync(file, peak);
  });
}
