import type { QueueJob } from '../../src/queue/queue-job.js';
import { NIGHTLY_JOB } from '../../src/queue/slice-job.js';
import { parsePlanNightData, type PlanNightData } from './data.js';
import { handlePlanNight, type PlanNightHandlerDeps, type PlanNightResult } from './handler.js';
import { planNightQueueAction } from './queue-outcome.js';

/** The nightly fan-out as the queue worker runs it, under the name the nightly job scheduler fires. */
export function planNightJob(deps: PlanNightHandlerDeps): QueueJob<PlanNightData, PlanNightResult> {
  return {
    name: NIGHTLY_JOB,
    parse: parsePlanNightData,
    run: (data, context) => handlePlanNight(data, context, deps),
    toQueueAction: planNightQueueAction,
  };
}
