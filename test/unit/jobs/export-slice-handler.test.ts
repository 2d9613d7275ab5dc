import { describe, expect, it } from 'vitest';
import { handleExportSlice, type ExportSliceHandlerDeps } from '../../../jobs/export-slice/handler.js';
import { SyncError } from '../../../src/errors/sync-error.js';
import { createLogger } from '../../../src/logging/logger.js';
import type { QueueJobContext } from '../../../src/queue/queue-job.js';
import type { Slice } from '../../../src/slice/slice.js';

const SLICE: Slice = { portfolioId: 1001, reportType: 'index', reportDate: '2024-01-03' };

function rig() {
  const attempts: { slice: Slice; number: number; force: boolean }[] = [];
  const deaths: { stalls: number; starts: number }[] = [];
  let takeovers = 0;
  const deps: ExportSliceHandlerDeps = {
    attemptSlice: async (slice, attempt, options) => {
      attempts.push({ slice, number: attempt.number, force: options.force });
      return { status: 'no_data', final: true, slice, attempt: attempt.number, durationMs: 1, unchanged: false };
    },
    failDeadSlice: async (_slice, died) => {
      deaths.push(died);
      return new SyncError('WORKER_DIED', 'the worker running this slice stopped without finishing it');
    },
    maxStalledCount: 2,
    onStalledTakeover: () => (takeovers += 1),
    logger: createLogger({ level: 'silent' }),
  };
  return { deps, attempts, deaths, takeovers: () => takeovers };
}

const context = (fields: Partial<QueueJobContext>): QueueJobContext => ({
  jobId: 'slice-1001-index-2024-01-03',
  attempt: { number: 1, isLast: false },
  stalls: 0,
  earlierStarts: 0,
  keepWithJob: async () => undefined,
  ...fields,
});

describe('the export job’s handler', () => {
  it('attempts the slice as the queue counts the attempt, with force', async () => {
    const { deps, attempts } = rig();
    const result = await handleExportSlice({ slice: SLICE, force: true }, context({ attempt: { number: 2, isLast: true }, earlierStarts: 1 }), deps);
    expect(result).toMatchObject({ kind: 'attempted', outcome: { status: 'no_data' } });
    expect(attempts).toEqual([{ slice: SLICE, number: 2, force: true }]);
  });

  it('attempts a job stalled queue.maxStalledCount times, counting the takeover', async () => {
    const { deps, attempts, deaths, takeovers } = rig();
    await handleExportSlice({ slice: SLICE, force: false }, context({ stalls: 2, earlierStarts: 2 }), deps);
    expect(attempts).toHaveLength(1);
    expect(deaths).toEqual([]);
    expect(takeovers()).toBe(1);
  });

  it('fails a job stalled once more without attempting it', async () => {
    const { deps, attempts, deaths } = rig();
    const result = await handleExportSlice({ slice: SLICE, force: false }, context({ stalls: 3, earlierStarts: 3 }), deps);
    expect(result).toMatchObject({ kind: 'died', error: { code: 'WORKER_DIED' } });
    expect(attempts).toEqual([]);
    expect(deaths).toEqual([{ stalls: 3, starts: 3 }]);
  });
});
