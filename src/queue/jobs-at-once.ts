/**
 * Jobs a worker takes at once for `concurrency` downloads: twice as many, so that a slice waiting
 * for its transaction, or being written in it, does not keep a download slot idle. Group commit has
 * a slice wait for the group it joins to commit; were the jobs no more than the downloads, that
 * wait would be time the service is asked for nothing. The export client's slots keep the
 * downloads at `concurrency` (see `DownloadSlots`).
 */
export function jobsAtOnce(concurrency: number): number {
  return concurrency * 2;
}
