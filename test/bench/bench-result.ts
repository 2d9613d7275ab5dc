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
}

/** A benchmark module: runs the product and its raw baseline in this process run, one after the other. */
export interface Benchmark {
  readonly name: string;
  /** Place in the table (the numbering: 1 small slices … 5 scale of the plan). */
  readonly order: number;
  run(size: BenchSize): Promise<BenchResult[]>;
}
