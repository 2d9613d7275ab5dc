import { SyncError } from '../../src/errors/sync-error.js';
import type { Logger } from '../../src/logging/logger.js';
import type { BackfillPlan } from '../../src/queue/backfill-plan.js';
import type { ExportQueue } from '../../src/queue/export-queue.js';
import { refillBackfill, scheduleRefill } from '../../src/queue/refill-backfill.js';
import type { Ledger } from '../../src/warehouse/ledger/ledger.js';
import type { RefillBackfillData } from './data.js';

export interface RefillBackfillHandlerDeps {
  readonly exportQueue: ExportQueue;
  readonly ledger: Ledger;
  /** The worker's shutdown: a step stops at its next batch and is taken up by another worker. */
  readonly shutdown?: AbortSignal;
  readonly logger: Logger;
}

/** What a refill step came to. */
export type RefillBackfillResult =
  | { readonly kind: 'scheduled'; readonly handed: number; readonly nextDelayMs: number }
  | { readonly kind: 'finished'; readonly plan: BackfillPlan }
  /** The plan is gone (finished and expired, or deleted), or a later step has run already. */
  | { readonly kind: 'stale' }
  /** Another process holds the plan's lease. */
  | { readonly kind: 'busy' }
  | { readonly kind: 'interrupted' }
  /** Redis or the warehouse did not answer: the step is tried again, the plan keeps its place. */
  | { readonly kind: 'trouble'; readonly error: SyncError | Error };

/** The shortest and longest wait between steps. */
export const REFILL_DELAY_BOUNDS_MS = { min: 25, max: 2_000 } as const;

/**
 * The wait before the next step, from how full the queue was at this one: half drained or more,
 * the workers are quicker than the steps, so sooner; nearly full, later. The window then refills
 * about when half of it has been taken, whatever the workers' pace.
 */
export function nextRefillDelayMs(delayMs: number, unfinishedBefore: number, window: number): number {
  let next = delayMs;
  if (unfinishedBefore < window / 2) next = delayMs / 2;
  else if (unfinishedBefore > (window * 3) / 4) next = delayMs * 1.5;
  return Math.min(REFILL_DELAY_BOUNDS_MS.max, Math.max(REFILL_DELAY_BOUNDS_MS.min, next));
}

/**
 * One step of a backfill plan, run by whichever worker takes the job: under the plan's lease,
 * tops the queue up from the plan's cursor (see `refillBackfill`), then schedules the next step
 * before saving that it did, so a crash between the two never ends the plan (a step that finds a
 * later one already ran does nothing).
 */
export async function handleRefillBackfill(data: RefillBackfillData, deps: RefillBackfillHandlerDeps): Promise<RefillBackfillResult> {
  const { exportQueue, ledger, logger } = deps;
  const { plans } = exportQueue;
  try {
    const leased = await plans.withLease(data.planId, async (): Promise<RefillBackfillResult> => {
      const plan = await plans.get(data.planId);
      if (!plan || plan.state === 'queued' || plan.step > data.step) return { kind: 'stale' };
      const step = await refillBackfill(plan, { exportQueue, ledger, signal: deps.shutdown });
      if (step.interrupted) return { kind: 'interrupted' };
      if (step.plan.state === 'queued') {
        logger.info({ plan: plan.id, ...step.plan.handed }, 'backfill plan queued its last slices');
        return { kind: 'finished', plan: step.plan };
      }
      const nextDelayMs = nextRefillDelayMs(data.delayMs, step.unfinishedBefore, plan.window);
      const next: BackfillPlan = { ...step.plan, step: data.step + 1 };
      await scheduleRefill(exportQueue, next, { delayMs: nextDelayMs });
      await plans.save(next);
      return { kind: 'scheduled', handed: step.handed, nextDelayMs };
    });
    return leased.ran ? leased.value : { kind: 'busy' };
  } catch (error) {
    if (error instanceof SyncError) {
      logger.error({ plan: data.planId, code: error.code, err: error }, 'backfill plan could not queue its next slices: trying again shortly');
      return { kind: 'trouble', error };
    }
    logger.error({ plan: data.planId, err: error }, 'backfill plan could not queue its next slices: trying again shortly');
    return { kind: 'trouble', error: error as Error };
  }
}
