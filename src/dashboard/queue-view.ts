import type { Queue } from 'bullmq';
import type { Slice } from '../slice/slice.js';
import { sliceJobId, sliceOfJobId } from '../queue/slice-job.js';
import { settleWithin } from '../runtime/settle-within.js';

/** Job counts by state, as BullMQ keeps them. */
export interface QueueCounts {
  readonly waiting: number;
  readonly prioritized: number;
  readonly delayed: number;
  readonly active: number;
  readonly completed: number;
  readonly failed: number;
}

/** What the queue panel shows. */
export type QueueSnapshot =
  | {
      readonly reachable: true;
      readonly location: string;
      readonly counts: QueueCounts;
      /** Jobs per minute over the last few minutes, from the workers' BullMQ metrics; null until they record any. */
      readonly perMinute: { readonly completed: number | null; readonly failed: number | null };
    }
  | { readonly reachable: false; readonly location: string; readonly reason: string };

/** The slices the queue holds, by state; `truncated` when there were more than were read. */
export interface QueuedSlices {
  readonly queued: readonly Slice[];
  readonly running: readonly Slice[];
  readonly truncated: boolean;
}

export interface QueueViewOptions {
  readonly queue: Queue;
  /** `REDIS_URL` as it may be shown. */
  readonly location: string;
  /** True while the connection is known to be down: answer at once instead of waiting for it. */
  readonly isDown: () => boolean;
  /**
   * Longest wait for Redis per question: the page says "unreachable" rather than hang.
   * @defaultValue 3000
   */
  readonly timeoutMs?: number;
  /**
   * Most job ids read per state for the grid's queued and running cells.
   * @defaultValue 200000
   */
  readonly maxJobIds?: number;
  readonly now?: () => number;
}

/** Minutes the rate is averaged over. */
const RATE_MINUTES = 5;

/**
 * The read-only view of the export queue the dashboard draws: counts, rates, and which slices are
 * waiting or running. Never changes the queue, and never waits past `timeoutMs` for Redis.
 */
export class QueueView {
  readonly #options: QueueViewOptions;
  readonly #timeoutMs: number;
  readonly #maxJobIds: number;
  readonly #now: () => number;
  /** Readings of BullMQ's completed/failed counters, so the rate is measured here once the page has been open a minute. */
  readonly #readings: { at: number; completed: number; failed: number }[] = [];

  constructor(options: QueueViewOptions) {
    this.#options = options;
    this.#timeoutMs = options.timeoutMs ?? 3000;
    this.#maxJobIds = options.maxJobIds ?? 200_000;
    this.#now = options.now ?? Date.now;
  }

  get queue(): Queue {
    return this.#options.queue;
  }

  async snapshot(): Promise<QueueSnapshot> {
    const { queue, location } = this.#options;
    try {
      const [counts, completed, failed] = await this.#ask(() =>
        Promise.all([
          queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'),
          queue.getMetrics('completed', 0, RATE_MINUTES - 1),
          queue.getMetrics('failed', 0, RATE_MINUTES - 1),
        ]),
      );
      return {
        reachable: true,
        location,
        counts: {
          waiting: counts.waiting ?? 0,
          prioritized: counts.prioritized ?? 0,
          delayed: counts.delayed ?? 0,
          active: counts.active ?? 0,
          completed: counts.completed ?? 0,
          failed: counts.failed ?? 0,
        },
        perMinute: this.#rates(completed, failed),
      };
    } catch (error) {
      return { reachable: false, location, reason: error instanceof Error ? error.message : String(error) };
    }
  }

  /** The slices whose jobs wait (waiting, prioritized, delayed) or run, parsed from their job ids. */
  async slices(): Promise<QueuedSlices> {
    const { queue } = this.#options;
    // One read per state, each up to one id past the limit, which says there were more.
    const states = ['waiting', 'prioritized', 'delayed', 'active'] as const;
    const ids = await this.#ask(() => Promise.all(states.map((state) => queue.getRanges([state], 0, this.#maxJobIds))));
    const truncated = ids.some((list) => list.length > this.#maxJobIds);
    const [waiting, prioritized, delayed, active] = ids.map((list) => list.slice(0, this.#maxJobIds)) as [string[], string[], string[], string[]];
    const queuedIds = [...waiting, ...prioritized, ...delayed];
    const runningIds = active;
    return { queued: slicesOf(queuedIds), running: slicesOf(runningIds), truncated };
  }

  /** The state of the slice's job (`waiting`, `active`, `completed`…), or undefined when the queue holds none. */
  async jobState(slice: Slice): Promise<string | undefined> {
    const state = await this.#ask(() => this.#options.queue.getJobState(sliceJobId(slice)));
    return state === 'unknown' ? undefined : state;
  }

  /**
   * Completed and failed jobs per minute. BullMQ's counters are read on every snapshot; once they
   * span a minute the rate is measured from them, before that it comes from the per-minute data
   * points the workers record (zero when the newest is older than the window).
   */
  #rates(
    completed: { meta: { count: number; prevTS: number }; data: number[] },
    failed: { meta: { count: number; prevTS: number }; data: number[] },
  ): { completed: number | null; failed: number | null } {
    const now = this.#now();
    this.#readings.push({ at: now, completed: completed.meta.count, failed: failed.meta.count });
    while (this.#readings.length > 1 && now - this.#readings[0]!.at > RATE_MINUTES * 60_000) this.#readings.shift();
    const oldest = this.#readings[0]!;
    const minutes = (now - oldest.at) / 60_000;
    if (minutes >= 1) {
      return { completed: round((completed.meta.count - oldest.completed) / minutes), failed: round((failed.meta.count - oldest.failed) / minutes) };
    }
    const fromPoints = (metrics: { meta: { count: number; prevTS: number }; data: number[] }): number | null => {
      if (metrics.meta.count === 0 && metrics.data.length === 0) return null;
      if (now - metrics.meta.prevTS > RATE_MINUTES * 60_000) return 0;
      const points = metrics.data.slice(0, RATE_MINUTES);
      return points.length === 0 ? 0 : round(points.reduce((sum, point) => sum + point, 0) / points.length);
    };
    return { completed: fromPoints(completed), failed: fromPoints(failed) };
  }

  async #ask<T>(question: () => Promise<T>): Promise<T> {
    const { location } = this.#options;
    if (this.#options.isDown()) throw new Error(`Redis at ${location} is unreachable (reconnecting)`);
    return settleWithin(question(), this.#timeoutMs, () => {
      throw new Error(`Redis at ${location} did not answer within ${this.#timeoutMs} ms`);
    });
  }
}

function slicesOf(ids: readonly string[]): Slice[] {
  return ids.map(sliceOfJobId).filter((slice): slice is Slice => slice !== undefined);
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
