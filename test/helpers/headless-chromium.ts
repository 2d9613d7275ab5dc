import { execFileSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium, headless, driven by playwright-core (no browser download: `.ci/run` installs
 * the `chromium` package when it is missing). The networking flags keep Chromium's own calls home
 * from being refused, many at a time, on a machine with no network.
 */
export async function launchChromium(): Promise<Browser> {
  let executablePath: string;
  try {
    executablePath = execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error("no chromium on PATH: install Debian's package (apt-get install -y chromium), as .ci/run does");
  }
  return chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}
