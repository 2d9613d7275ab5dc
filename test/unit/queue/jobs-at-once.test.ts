import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { ConfigError } from '../../../src/errors/sync-error.js';
import { jobsAtOnce } from '../../../src/queue/jobs-at-once.js';

/** The jobs a worker of these settings takes at once, as `worker` computes them. */
function jobsOf(env: Record<string, string>): number {
  const { settings } = loadConfig({ cwd: mkdtempSync(join(tmpdir(), 'report-sync-jobs-at-once-')), env });
  return jobsAtOnce({ concurrency: settings.concurrency, prefetch: settings.queue.prefetch });
}

describe('jobs a worker takes at once', () => {
  it('are its downloads and as many again by default, so slices written leave their slots to the next', () => {
    expect(jobsOf({})).toBe(16);
    expect(jobsOf({ REPORT_SYNC_CONCURRENCY: '1' })).toBe(2);
    expect(jobsOf({ REPORT_SYNC_CONCURRENCY: '3', REPORT_SYNC_QUEUE__PREFETCH: 'null' })).toBe(6);
  });

  it('are its downloads and queue.prefetch more when set: 0 holds only what it downloads', () => {
    expect(jobsOf({ REPORT_SYNC_CONCURRENCY: '4', REPORT_SYNC_QUEUE__PREFETCH: '0' })).toBe(4);
    expect(jobsOf({ REPORT_SYNC_CONCURRENCY: '4', REPORT_SYNC_QUEUE__PREFETCH: '10' })).toBe(14);
  });

  it('refuse a prefetch that is not a whole number of at least 0, naming the variable', () => {
    for (const value of ['-1', '1.5']) {
      let message = '';
      try {
        jobsOf({ REPORT_SYNC_QUEUE__PREFETCH: value });
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        message = (error as Error).message;
      }
      expect(message).toContain('queue.prefetch (from REPORT_SYNC_QUEUE__PREFETCH)');
    }
  });
});
