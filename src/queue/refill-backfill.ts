import { selectedSlicesFrom, type PlacedSlice } from '../planning/selected-slices-from.js';
import { sliceKey, type Slice } from '../slice/slice.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';
import { sliceOfEntry } from '../warehouse/ledger/ledger.js';
import type { BackfillPlan } from './backfill-plan.js';
import type { AddedSlices, ExportQueue } from './export-queue.js';

/** Name of the job that queues a backfill plan's next slices. */
export const REFILL_BACKFILL_JOB = 'refill-backfill';

/** The wait before a plan's first queued step, before the workers have shown how fast they drain the queue. */
export const FIRST_REFILL_DELAY_MS = 500;

export interface RefillOptions {
  readonly exportQueue: ExportQueue;
  readonly ledger: Ledger;
  /** A shutdown: the step stops at the next batch and is taken up again by the next one. */
  readonly signal?: AbortSignal;
  /** Called after each batch Redis took, with the slices handled so far in this step. */
  readonly onBatch?: (handled: number) => void;
}

/** What one step did. */
export interface RefillStep {
  /** The plan as saved after the step. */
  readonly plan: BackfillPlan;
  /** Slices handed to the queue by this step (queued, queued again or found pending). */
  readonly handed: number;
  /** Jobs the queue held before the step (waiting, delayed or running). */
  readonly unfinishedBefore: number;
  /** Set when a shutdown stopped the step: the plan keeps the positions to take up. */
  readonly interrupted: boolean;
}

/**
 * One step of a backfill plan: tops the queue up to the plan's window with the selection's next
 * slices from the cursor, then moves the cursor past them. The positions being queued are saved
 * first; a step stopped half-way (a shutdown, a crash) is taken up by the next one, which leaves
 * out the slices found queued or done since the plan began, so nothing is queued twice.
 * The caller holds the plan's lease.
 */
export async function refillBackfill(plan: BackfillPlan, options: RefillOptions): Promise<RefillStep> {
  let current = plan;
  if (current.unfinishedStep) {
    const retaken = await retakeUnfinishedStep(current, options);
    if (retaken.interrupted) return retaken;
    current = retaken.plan;
  }
  const unfinishedBefore = await options.exportQueue.unfinished();
  const room = current.window - unfinishedBefore;
  if (current.state === 'queued' || room <= 0) return { plan: current, handed: 0, unfinishedBefore, interrupted: false };

  const taken: PlacedSlice[] = [];
  let end = current.total;
  for await (const placed of selectedSlicesFrom(current.range, current.selection, options.ledger, current.cursor)) {
    taken.push(placed);
    if (taken.length === room) {
      end = placed.position + 1;
      break;
    }
  }
  current = { ...current, unfinishedStep: { from: current.cursor, to: end } };
  await options.exportQueue.plans.save(current);
  const added = await add(
    current,
    taken.map((placed) => placed.slice),
    options,
  );
  if (added.interrupted) return { plan: current, handed: handedBy(added), unfinishedBefore, interrupted: true };
  const next: BackfillPlan = {
    ...withoutUnfinishedStep(current),
    cursor: end,
    state: end >= current.total ? 'queued' : 'queueing',
    handed: {
      ...current.handed,
      queued: current.handed.queued + added.queued,
      requeued: current.handed.requeued + added.requeued,
      pending: current.handed.pending + added.pending,
    },
  };
  await options.exportQueue.plans.save(next);
  return { plan: next, handed: handedBy(added), unfinishedBefore, interrupted: false };
}

/**
 * The positions a stopped step was queueing, again: slices with an outcome since the plan began
 * (or a job finished since then) were handed before the stop and are counted as such; the rest are
 * queued, or left alone if their job is waiting or running.
 */
async function retakeUnfinishedStep(plan: BackfillPlan, options: RefillOptions): Promise<RefillStep> {
  const { from, to } = plan.unfinishedStep!;
  const within = async (selection: BackfillPlan['selection']) => {
    const slices: Slice[] = [];
    for await (const placed of selectedSlicesFrom(plan.range, selection, options.ledger, from)) {
      if (placed.position >= to) break;
      slices.push(placed.slice);
    }
    return slices;
  };
  // Every slice of the positions, then the selection asked again: a slice the step handed may no
  // longer be selected (loaded since, for --only-missing) yet still counts as the plan's.
  const candidates = await within({ kind: 'all' });
  const selected = plan.selection.kind === 'all' ? undefined : new Set((await within(plan.selection)).map(sliceKey));
  const done = candidates.length === 0 ? new Set<string>() : await doneSince(plan, candidates, options.ledger);
  const toAdd = candidates.filter((slice) => !done.has(sliceKey(slice)) && (selected === undefined || selected.has(sliceKey(slice))));
  const recovered = candidates.filter((slice) => done.has(sliceKey(slice))).length;
  const added = await add(plan, toAdd, { ...options, finishedSinceMs: plan.createdAtMs });
  const unfinishedBefore = 0;
  if (added.interrupted) return { plan, handed: handedBy(added), unfinishedBefore, interrupted: true };
  const next: BackfillPlan = {
    ...withoutUnfinishedStep(plan),
    cursor: Math.max(plan.cursor, to),
    state: to >= plan.total ? 'queued' : 'queueing',
    handed: {
      queued: plan.handed.queued + added.queued,
      requeued: plan.handed.requeued + added.requeued,
      pending: plan.handed.pending + added.pending,
      recovered: plan.handed.recovered + recovered + added.finishedSince,
    },
  };
  await options.exportQueue.plans.save(next);
  return { plan: next, handed: handedBy(added) + recovered, unfinishedBefore, interrupted: false };
}

/** The keys of the slices among `slices` with an outcome checked since the plan began. */
async function doneSince(plan: BackfillPlan, slices: readonly Slice[], ledger: Ledger): Promise<Set<string>> {
  const dates = slices.map((slice) => slice.reportDate);
  const entries = await ledger.entries(
    { from: dates[0]!, to: dates[dates.length - 1]!, portfolios: plan.range.portfolios, reportTypes: plan.range.reportTypes },
    { checkedSince: plan.since },
  );
  return new Set(entries.map((entry) => sliceKey(sliceOfEntry(entry))));
}

function add(plan: BackfillPlan, slices: readonly Slice[], options: RefillOptions & { readonly finishedSinceMs?: number }): Promise<AddedSlices> {
  return options.exportQueue.addSlices(slices, plan.priority, {
    force: plan.force,
    signal: options.signal,
    onBatch: options.onBatch,
    finishedSinceMs: options.finishedSinceMs,
  });
}

function handedBy(added: AddedSlices): number {
  return added.queued + added.requeued + added.pending + added.finishedSince;
}

function withoutUnfinishedStep(plan: BackfillPlan): BackfillPlan {
  const { unfinishedStep: _dropped, ...rest } = plan;
  return rest;
}

/** The job id of a plan's refill step: the same step is never scheduled twice. BullMQ refuses `:` in ids. */
export function refillJobId(planId: string, step: number): string {
  return `refill-${planId}-${step}`;
}

/**
 * Schedules the plan's next step as a job of the queue, so the backfill goes on whichever process
 * started it. Without a priority it is taken before every slice; the job id makes scheduling the
 * same step again (a re-run command, a step taken up twice) add nothing.
 */
export async function scheduleRefill(exportQueue: ExportQueue, plan: BackfillPlan, options: { readonly delayMs: number }): Promise<void> {
  const delayMs = Math.max(0, Math.round(options.delayMs));
  await exportQueue.queue.add(
    REFILL_BACKFILL_JOB,
    { planId: plan.id, step: plan.step, delayMs },
    { jobId: refillJobId(plan.id, plan.step), delay: delayMs, removeOnComplete: true, removeOnFail: true },
  );
}
