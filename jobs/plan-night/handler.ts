import type { Logger } from '../../src/logging/logger.js';
import { planNightly, type NightlyPlan } from '../../src/planning/plan-nightly.js';
import type { ExportQueue } from '../../src/queue/export-queue.js';
import type { NightInProgress } from '../../src/queue/follow-night.js';
import type { NightlyPlanSettings } from '../../src/queue/nightly-schedule.js';
import type { QueueJobContext } from '../../src/queue/queue-job.js';
import type { Ledger } from '../../src/warehouse/ledger/ledger.js';
import { nightlyPayloadOf, type NightlyPayload, type PlanNightData } from './data.js';

/**
 * A night's plan: yesterday's slices plus the lookback re-checks, from the ledger (see
 * {@link planNightly}). `nightly` runs them in-process; the queued job queues them.
 */
export function planNight(ledger: Ledger, payload: NightlyPayload): Promise<NightlyPlan> {
  return planNightly({ ledger, ...payload });
}

/** What a queued night came to: followed to the end (or not followed), or interrupted by a shutdown while followed. */
export interface PlanNightResult {
  readonly night: NightInProgress;
  readonly followed: 'told' | 'interrupted' | 'not-followed';
}

export interface PlanNightHandlerDeps {
  readonly ledger: Ledger;
  /** Where the night's slices are queued. */
  readonly exportQueue: ExportQueue;
  /** `queue.nightlyPriority`. */
  readonly priority: number;
  /** The warehouse's clock (see `warehouseNow`): the night counts the outcomes its ledger stamps after it, whichever machine wrote them. */
  readonly warehouseNow: () => Promise<string>;
  /** This process's own nightly settings, for a job that carries none usable. */
  readonly ownNightly: NightlyPlanSettings;
  /**
   * Follows a queued night until its slices have outcomes and tells it (log, alert, freshness);
   * `interrupted` on a shutdown. Without it, the job ends once the slices are queued.
   */
  readonly followNight?: (night: NightInProgress) => Promise<'told' | 'interrupted'>;
  readonly logger: Logger;
}

/**
 * The nightly fan-out: plans the night, queues its slices, keeps the night with the job (so that
 * a worker stopped while following it hands it on instead of fanning out twice), then follows it.
 */
export async function handlePlanNight(data: PlanNightData, context: QueueJobContext, deps: PlanNightHandlerDeps): Promise<PlanNightResult> {
  const { logger } = deps;
  let night = data.night;
  if (!night) {
    let nightly = data.nightly;
    if (!nightly) {
      logger.warn({ jobId: context.jobId }, "the nightly job carries no usable settings (registered by an older release?): planning it with this worker's own");
      nightly = deps.ownNightly;
    }
    const since = await deps.warehouseNow();
    const plan = await planNight(deps.ledger, nightlyPayloadOf(nightly));
    const { queued, requeued, pending } = await deps.exportQueue.addSlices(plan.slices, deps.priority);
    logger.info(
      {
        planned: plan.slices.length,
        queued,
        requeued,
        alreadyPending: pending,
        portfolios: nightly.portfolios,
        reportTypes: nightly.reportTypes,
        lookbackDays: nightly.lookbackDays,
      },
      'nightly fan-out queued its slices',
    );
    night = {
      reportDate: plan.reportDate,
      range: { from: plan.lookbackFrom, to: plan.reportDate, portfolios: nightly.portfolios, reportTypes: nightly.reportTypes },
      since,
      expected: queued + requeued + pending,
    };
    await context.keepWithJob({ night });
  }
  return { night, followed: deps.followNight ? await deps.followNight(night) : 'not-followed' };
}
