import { createHash, randomBytes } from 'node:crypto';
import type { RedisClient } from './redis-connection.js';
import { z } from 'zod';
import { isIsoDate } from '../dates/is-iso-date.js';
import { UsageError } from '../errors/sync-error.js';
import { isReportType, type ReportType } from '../reports/report-types.js';
import type { SliceSelection } from '../selection/slice-selection.js';
import type { SliceRange } from '../slice/slice-range.js';

/** What a plan has handed to the queue so far: the outcomes `backfill --wait` waits for. */
export interface HandedSlices {
  /** Slices with no job in the queue, queued. */
  readonly queued: number;
  /** Slices whose earlier job had finished, queued again. */
  readonly requeued: number;
  /** Slices left alone because their job was still waiting, delayed or running. */
  readonly pending: number;
  /** Slices of an interrupted step found done since the plan began: handed before the interruption. */
  readonly recovered: number;
}

/**
 * A backfill as it is kept in Redis: the range, the selection and a cursor, never all its jobs at
 * once. The queue holds at most `window` jobs; whichever process holds the plan's lease queues the
 * next ones from `cursor` as workers finish (see `refillBackfill`).
 */
export interface BackfillPlan {
  readonly id: string;
  readonly range: SliceRange;
  readonly selection: SliceSelection;
  readonly force: boolean;
  /** `queue.backfillPriority` when the plan was made. */
  readonly priority: number;
  /** Most jobs the queue holds while this plan refills it (`queue.backfillWindow`). */
  readonly window: number;
  /** Slices of the range before the selection: where the cursor ends. */
  readonly total: number;
  /** Position in the range's order of the next slice to consider. */
  readonly cursor: number;
  /**
   * Positions a step was queueing when it stopped (a shutdown, a crash): some of its slices may be
   * queued, or even done, already. The next step takes them again, leaving out those.
   */
  readonly unfinishedStep?: { readonly from: number; readonly to: number };
  /** When the plan began, by the warehouse's clock: outcomes checked since then are the plan's. */
  readonly since: string;
  /** When the plan began, by the clock BullMQ stamps finished jobs with. */
  readonly createdAtMs: number;
  readonly handed: HandedSlices;
  /** `queueing` until the cursor reaches the end of the range, then `queued`. */
  readonly state: 'queueing' | 'queued';
  /** Steps taken: names the next refill job, so a step is never scheduled twice. */
  readonly step: number;
}

/** How long a finished plan stays readable (for `backfill --wait`, and re-runs that ask for it). */
const FINISHED_PLAN_TTL_SECONDS = 7 * 86_400;
/**
 * How long a plan's lease lasts unless renewed: a step renews it while it runs, so a process that
 * died in a step holds the plan this long at most.
 */
const LEASE_MS = 10_000;
const RENEW_EVERY_MS = LEASE_MS / 4;

/** Deletes the lease only if it is still ours. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
/** Extends the lease only if it is still ours. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/**
 * The same backfill asked for again (same queue, range, selection and force) gets the same plan id,
 * so re-running a command resumes its plan instead of starting a second one beside it.
 */
export function backfillPlanId(request: { readonly queueName: string; readonly range: SliceRange; readonly selection: SliceSelection; readonly force: boolean }): string {
  const { queueName, range, selection, force } = request;
  const canonical = JSON.stringify([queueName, range.from, range.to, range.portfolios, range.reportTypes, selection, force]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/** Where backfill plans live: beside the queue's own keys, so a Redis Cluster keeps them in its slot. */
export class BackfillPlans {
  readonly #redis: RedisClient;
  readonly #keyOf: (name: string) => string;

  constructor(options: { readonly redis: RedisClient; readonly keyOf: (name: string) => string }) {
    this.#redis = options.redis;
    this.#keyOf = options.keyOf;
  }

  #key(id: string): string {
    return this.#keyOf(`backfill-plan:${id}`);
  }

  /** @throws UsageError when what Redis holds under the plan's key is not a plan (anyone who reaches Redis can write it) */
  async get(id: string): Promise<BackfillPlan | undefined> {
    const text = await this.#redis.get(this.#key(id));
    return text === null ? undefined : parseBackfillPlan(id, text);
  }

  /** Writes the plan whole; a finished one expires after a week. */
  async save(plan: BackfillPlan): Promise<void> {
    const text = JSON.stringify(plan);
    if (plan.state === 'queued') await this.#redis.set(this.#key(plan.id), text, 'EX', FINISHED_PLAN_TTL_SECONDS);
    else await this.#redis.set(this.#key(plan.id), text);
  }

  /**
   * Runs `step` holding the plan's lease, so two processes never move one cursor; undefined when
   * another process holds it.
   */
  async withLease<T>(id: string, step: () => Promise<T>): Promise<{ readonly ran: true; readonly value: T } | { readonly ran: false }> {
    const key = `${this.#key(id)}:lease`;
    const token = randomBytes(8).toString('hex');
    if ((await this.#redis.set(key, token, 'PX', LEASE_MS, 'NX')) !== 'OK') return { ran: false };
    const renewing = setInterval(() => {
      // A failed renewal is not fatal: the step is idempotent, and Redis trouble ends it anyway.
      this.#redis.eval(RENEW, 1, key, token, LEASE_MS).catch(() => undefined);
    }, RENEW_EVERY_MS);
    try {
      return { ran: true, value: await step() };
    } finally {
      clearInterval(renewing);
      await this.#redis.eval(RELEASE, 1, key, token);
    }
  }
}

const count = z.number().int().nonnegative();
const isoDate = z.string().refine(isIsoDate, 'not a date in YYYY-MM-DD form');
const PLAN_SCHEMA = z.object({
  id: z.string().regex(/^[0-9a-f]{16}$/),
  range: z.object({
    from: isoDate,
    to: isoDate,
    portfolios: z.array(z.number().int().positive()),
    reportTypes: z.array(z.string().refine(isReportType, 'not a report type')).transform((types) => types as ReportType[]),
  }),
  selection: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('all') }),
    z.object({ kind: z.literal('missing') }),
    z.object({ kind: z.literal('failed'), codes: z.array(z.string()).optional() }),
  ]),
  force: z.boolean(),
  priority: z.number().int().positive(),
  window: z.number().int().positive(),
  total: count,
  cursor: count,
  unfinishedStep: z.object({ from: count, to: count }).optional(),
  since: z.string().refine((text) => !Number.isNaN(Date.parse(text)), 'not a time'),
  createdAtMs: count,
  handed: z.object({ queued: count, requeued: count, pending: count, recovered: count }),
  state: z.enum(['queueing', 'queued']),
  step: count,
});

/** A plan as read from Redis, checked field by field. */
function parseBackfillPlan(id: string, text: string): BackfillPlan {
  const damaged = (what: string) => new UsageError(`backfill plan ${id} in Redis is damaged (${what}): delete its key and run the backfill command again to make a new one`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw damaged('not JSON');
  }
  const parsed = PLAN_SCHEMA.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw damaged(issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message);
}
