/**
 * A ZIP body of at least this many bytes is inflated, parsed and typed on a worker thread while
 * the slice's transaction writes its rows (see `readZipRowsOnWorker`); a smaller one stays on the
 * one thread, where a worker's start (about 30 ms and 10 MB) would cost more than it saves. 8 MiB
 * of ZIP is about 250,000 rows of a constituent report.
 */
export const THREADED_PARSE_BYTES = 8 * 1024 ** 2;
