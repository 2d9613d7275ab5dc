import { SingleBar } from 'cli-progress';
import type { SliceOutcome } from '../outcomes/slice-outcome.js';

/** Progress on a terminal; on anything else the per-slice log lines are the progress. */
export interface ProgressDisplay {
  onFinal(outcome: SliceOutcome): void;
  stop(): void;
}

/** A bar on standard error when it is a terminal, nothing otherwise. */
export function createProgressDisplay(total: number, stream: NodeJS.WritableStream & { isTTY?: boolean }): ProgressDisplay {
  if (!stream.isTTY || total === 0) return { onFinal: () => undefined, stop: () => undefined };
  const bar = new SingleBar({
    stream,
    format: 'syncing [{bar}] {value}/{total} slices | loaded {loaded} | no data {noData} | failed {failed} | eta {eta_formatted}',
    hideCursor: true,
    etaBuffer: 50,
  });
  const counts = { loaded: 0, noData: 0, failed: 0 };
  bar.start(total, 0, counts);
  return {
    onFinal(outcome) {
      if (outcome.status === 'loaded') counts.loaded += 1;
      else if (outcome.status === 'no_data') counts.noData += 1;
      else counts.failed += 1;
      bar.increment(1, counts);
    },
    stop: () => bar.stop(),
  };
}
