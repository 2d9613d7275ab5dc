import { planNightly, type NightlyPlan } from '../src/planning/plan-nightly.js';
import type { NightlyPlanSettings } from '../src/queue/nightly-schedule.js';
import { NIGHTLY_JOB } from '../src/queue/slice-job.js';
import type { Ledger } from '../src/warehouse/ledger/ledger.js';

/** The name the queue's nightly job scheduler fires under (`scheduler`, `worker`). */
export const NIGHTLY_JOB_NAME = NIGHTLY_JOB;

/** What a nightly job carries: the nightly settings it is planned with (no secrets). */
export type NightlyJobPayload = Pick<NightlyPlanSettings, 'portfolios' | 'reportTypes' | 'timeZone' | 'lookbackDays'> & { readonly now?: Date };

/**
 * The nightly job's handler, the one `nightly` (in-process) and the queue worker's fan-out both
 * register: yesterday's slices plus the lookback re-checks, planned from the ledger (see
 * {@link planNightly}). The caller runs or queues them.
 */
export function planNightlyJob(ledger: Ledger, payload: NightlyJobPayload): Promise<NightlyPlan> {
  return planNightly({ ledger, ...payload });
}
