/**
 * Jobs a worker takes at once: its `concurrency` downloads and `prefetch` more (`null`: as many
 * again), so that a slice waiting for its transaction, or being written in it, does not keep a
 * download slot idle. Group commit has a slice wait for the group it joins to commit; were the
 * jobs no more than the downloads, that wait would be time the service is asked for nothing. The
 * export client's slots keep the downloads at `concurrency` (see `DownloadSlots`).
 */
export function jobsAtOnce(options: { readonly concurrency: number; readonly prefetch?: number | null }): number {
  return options.concurrency + (options.prefetch ?? options.concurrency);
}
