import type { Slice } from '../slice/slice.js';
import type { Ledger, SliceCheckEntry } from '../warehouse/ledger/ledger.js';
import type { QueueView } from './queue-view.js';

/** One slice's ledger row as the dashboard shows it; `status` is `missing` when it has none. */
export interface SliceView {
  readonly portfolioId: number;
  readonly reportType: string;
  readonly reportDate: string;
  readonly status: 'loaded' | 'no_data' | 'failed' | 'missing';
  readonly rows: number | null;
  readonly bytes: number | null;
  readonly format: string | null;
  readonly fileName: string | null;
  readonly sha256: string | null;
  /** The load that wrote the slice's rows: the `load_id` its rows carry, and when it wrote them. */
  readonly loadId: string | null;
  readonly loadedAt: string | null;
  readonly attempts: number | null;
  readonly firstLoadedAt: string | null;
  readonly updatedAt: string | null;
  readonly checkedAt: string | null;
  /** How long the latest attempt took, in milliseconds. */
  readonly durationMs: number | null;
  readonly errorCode: string | null;
  readonly error: string | null;
  /** The data-quality checks of the slice's latest checked file (a refused one's included); none before it had any. */
  readonly checks: readonly SliceCheckEntry[];
  /** The slice's job, when the queue holds one: `waiting`, `active`, `delayed`…; null otherwise or with no queue. */
  readonly job: string | null;
}

/** The ledger row of one slice, and the state of its job when a queue is configured and answers. */
export async function sliceView(ledger: Ledger, slice: Slice, queue?: QueueView): Promise<SliceView> {
  const row = await ledger.row(slice);
  // A warehouse the next sync will migrate has no checks yet: the ledger row still shows.
  const checks = row ? await ledger.sliceChecks(slice).catch(() => []) : [];
  let job: string | null = null;
  if (queue) job = (await queue.jobState(slice).catch(() => undefined)) ?? null;
  return {
    ...slice,
    status: row?.status ?? 'missing',
    rows: row ? row.row_count : null,
    bytes: row?.bytes ?? null,
    format: row?.format ?? null,
    fileName: row?.file_name ?? null,
    sha256: row?.content_sha256 ?? null,
    loadId: row?.load_id ?? null,
    loadedAt: row?.loaded_at ?? null,
    attempts: row?.attempts ?? null,
    firstLoadedAt: row?.first_loaded_at ?? null,
    updatedAt: row?.updated_at ?? null,
    checkedAt: row?.checked_at ?? null,
    durationMs: row?.duration_ms ?? null,
    errorCode: row?.error_code ?? null,
    error: row?.error ?? null,
    checks,
    job,
  };
}
