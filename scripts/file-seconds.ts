import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { FILE_SECONDS_PATH, fileKey } from '../test/sequencer/longest-first-sequencer.js';

/**
 * Writes the table the test sequencer orders files by, from a JSON report of a full run:
 * `npx vitest run --reporter=json --outputFile=report.json && npm run test:weights -- report.json`.
 */
interface JsonReport {
  readonly testResults: readonly { readonly name: string; readonly startTime: number; readonly endTime: number }[];
}

const reportPath = process.argv[2];
if (!reportPath) {
  console.error('usage: npm run test:weights -- <vitest JSON report of a full run>');
  process.exit(2);
}
const report = JSON.parse(readFileSync(reportPath, 'utf8')) as JsonReport;
const root = process.cwd();
const seconds: Record<string, number> = {};
for (const file of report.testResults) {
  const path = relative(root, file.name);
  // Each project is named for its folder: test/<project>/….
  const project = path.split('/')[1];
  if (project === undefined) continue;
  seconds[fileKey(project, path)] = Math.round((file.endTime - file.startTime) / 100) / 10;
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync(FILE_SECONDS_PATH, `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`wrote ${Object.keys(sorted).length} files' seconds to ${relative(root, FILE_SECONDS_PATH.pathname)}`);
