/** How big a benchmark run is: `full` for `npm run bench`, `smoke` for the tiny run inside `npm test`. */
export type BenchSize = 'full' | 'smoke';

/** One row of the benchmark table. */
export interface BenchResult {
  /** e.g. "small slices, in-process". */
  readonly benchmark: string;
  /** The product's figure, with its unit ("2,410 slices/s", "peak RSS 180 MB"). */
  readonly product: string;
  /** The raw baseline's figure with its unit, or "—" when there is none. */
  readonly baseline: string;
  /** product ÷ baseline (or product ÷ ideal), or null when the row has no ratio. */
  readonly ratio: number | null;
  /** The target as written in the issue ("≥ 0.7 × raw", "≤ 250 MB", "= 1"). */
  readonly target: string;
  readonly pass: boolean;
  /** Anything a reader needs to read the row right (sizes, what was measured). */
  readonly note?: string;
  /** What the row's runs left behind, counted afterwards; not printed in the table (the smoke test asserts it). */
  readonly facts?: BenchFacts;
}

/**
 * What a benchmark can vouch for besides its speed, counted after its runs from the warehouse, the
 * ledger, the simulator or the queue (never copied from what was planned, except `slicesPlanned`).
 * Each benchmark fills the fields it can count.
 */
export interface BenchFacts {
  /** Slices (or jobs) the product side was given. */
  readonly slicesPlanned?: number;
  /** Of those, the slices the ledger has a row for. */
  readonly slicesRecorded?: number;
  /** Of those, the slices recorded `loaded`. */
  readonly slicesLoaded?: number;
  /** The most ledger rows any one of those slices has: 1 when each is recorded once. */
  readonly ledgerRowsPerSlice?: number;
  /** Ledger rows in the span of those slices that belong to none of them. */
  readonly ledgerRowsUnplanned?: number;
  /** The ledger's `row_count`, summed over those slices. */
  readonly ledgerRowCount?: number;
  /** Rows the simulator's file generator makes for those slices. */
  readonly rowsExpected?: number;
  /** Rows of those slices in the report's table afterwards. */
  readonly rowsLoaded?: number;
  /** Rows each raw baseline loaded, by baseline. */
  readonly baselineRows?: Readonly<Record<string, number>>;
  /** Export requests the simulator answered during the product's run, and how many of them with 200. */
  readonly exportRequests?: number;
  readonly exportAnswered200?: number;
  /** Export answers of 401 (a token used after it expired or was revoked). */
  readonly export401s?: number;
  /** Token requests the simulator saw during the product's run, and the most the row allows. */
  readonly tokenRequests?: number;
  readonly tokenRequestsBound?: number;
  /** Slices the ledger held as done (`loaded`, `no_data`) before the run: what `--only-missing` must skip. */
  readonly slicesDone?: number;
  /** Jobs the queue held after the product queued them, and after the raw baseline did. */
  readonly jobsQueued?: number;
  readonly baselineJobsQueued?: number;
  /** Jobs a worker attempted from a queue filled before it started (the plan-scale row's report of the workers' own pace). */
  readonly queuedFirstJobsQueued?: number;
  /** Distinct jobs a worker attempted while draining the queue, and the most attempts of one job. */
  readonly jobsAttempted?: number;
  readonly attemptsPerJob?: number;
  /** Rows of other slices the report table held while the row's slices were loaded (counted afterwards), and how many were seeded. */
  readonly reportRowsBeside?: number;
  readonly reportRowsBesidePlanned?: number;
  /** Portfolios those rows belong to (whole ids, as a real warehouse's), and how many were seeded. */
  readonly reportPortfoliosBeside?: number;
  readonly reportPortfoliosBesidePlanned?: number;
  /** The slices per outcome a command answered over a seeded ledger, and what the seed holds. */
  readonly slicesByOutcome?: OutcomeCounts;
  readonly slicesByOutcomeExpected?: OutcomeCounts;
  /** The same, as the dashboard's coverage view totalled them for the portfolios it was asked about. */
  readonly monthViewByOutcome?: OutcomeCounts;
  readonly monthViewByOutcomeExpected?: OutcomeCounts;
  /** Exit codes of the commands the row ran, that are not 0. */
  readonly nonZeroExits?: number;
}

/** Slices per outcome, `missing` being never attempted. */
export interface OutcomeCounts {
  readonly loaded: number;
  readonly noData: number;
  readonly failed: number;
  readonly missing: number;
}

/** A benchmark module: runs the product and its raw baseline in this process run, one after the other. */
export interface Benchmark {
  readonly name: string;
  /** Place in the table (the numbering: 1 small slices … 5 scale of the plan). */
  readonly order: number;
  run(size: BenchSize, options?: BenchRunOptions): Promise<BenchResult[]>;
}

/** What `run-benchmarks` may narrow a run to. */
export interface BenchRunOptions {
  /** Only the rows of these dialects (`sqlite`, `postgres`, `mysql`), for a benchmark that runs several. @defaultValue all */
  readonly dialects?: ReadonlySet<string>;
}
