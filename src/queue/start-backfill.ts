import type { SliceSelection } from '../selection/slice-selection.js';
import { countSlices, type SliceRange } from '../slice/slice-range.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';
import { backfillPlanId, type BackfillPlan } from './backfill-plan.js';
import type { ExportQueue } from './export-queue.js';
import { FIRST_REFILL_DELAY_MS, refillBackfill, scheduleRefill, type RefillStep } from './refill-backfill.js';

export interface BackfillRequest {
  readonly exportQueue: ExportQueue;
  readonly ledger: Ledger;
  readonly range: SliceRange;
  readonly selection: SliceSelection;
  readonly force: boolean;
  readonly queue: { readonly name: string; readonly backfillPriority: number; readonly backfillWindow: number };
  /** Now, by the warehouse's clock: a new plan's outcomes are those checked after it. */
  readonly since: string;
  /** Ctrl-C / SIGTERM: the first step stops at its next batch. */
  readonly signal?: AbortSignal;
  readonly onBatch?: (handled: number) => void;
}

/** What starting (or resuming) a backfill did. */
export interface StartedBackfill {
  /** The plan as it stands after the first step. */
  readonly plan: BackfillPlan;
  /** A plan for the same backfill was still queueing: this run went on with it. */
  readonly resumed: boolean;
  /** The first step, taken here; undefined when a worker was taking a step of the resumed plan. */
  readonly step: RefillStep | undefined;
}

/**
 * Makes the plan of a backfill (or finds the one still queueing for the same request), takes its
 * first step here (up to the window), and hands the rest to the workers as a refill job of the
 * queue. A step stopped by the signal schedules nothing: the same command, run again, goes on.
 */
export async function startBackfill(request: BackfillRequest): Promise<StartedBackfill> {
  const { exportQueue, range, selection, force, queue } = request;
  const { plans } = exportQueue;
  const id = backfillPlanId({ queueName: queue.name, range, selection, force });
  const existing = await plans.get(id);
  const resumed = existing?.state === 'queueing';
  const plan: BackfillPlan = resumed
    ? existing
    : {
        id,
        range,
        selection,
        force,
        priority: queue.backfillPriority,
        window: queue.backfillWindow,
        total: countSlices(range),
        cursor: 0,
        since: request.since,
        createdAtMs: Date.now(),
        handed: { queued: 0, requeued: 0, pending: 0, recovered: 0 },
        state: 'queueing',
        step: 0,
      };
  if (!resumed) await plans.save(plan);
  const leased = await plans.withLease(id, async () => {
    const step = await refillBackfill(plan, { exportQueue, ledger: request.ledger, signal: request.signal, onBatch: request.onBatch });
    if (step.interrupted || step.plan.state === 'queued') return step;
    // A new plan's next step is the first job; a resumed plan's is the job its chain is at, which
    // is added again only if the chain was lost (Redis restarted without persistence, say).
    const next = resumed ? step.plan : { ...step.plan, step: step.plan.step + 1 };
    await scheduleRefill(exportQueue, next, { delayMs: FIRST_REFILL_DELAY_MS });
    if (next !== step.plan) await plans.save(next);
    return { ...step, plan: next };
  });
  if (leased.ran) return { plan: leased.value.plan, resumed, step: leased.value };
  // A worker is taking a step of this plan right now: it schedules the next one itself.
  return { plan: (await plans.get(id)) ?? plan, resumed, step: undefined };
}
