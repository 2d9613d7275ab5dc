import { readFileSync } from 'node:fs';
import { packageFile } from './package-file.js';

/** report-sync's version, from its `package.json`. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { version: string }).version;
}
