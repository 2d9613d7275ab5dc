/**
 * Most characters of text one batch of rows holds (an INSERT's parameters, a COPY chunk, a message
 * between threads) before it is sent, whatever its row count. Rows of ordinary size reach
 * `warehouse.batchRows` long before this; rows near `limits.maxRecordBytes` would otherwise make
 * one batch hold hundreds of MiB, and a process running slices side by side several of them.
 */
export const MAX_BATCH_CHARS = 1024 ** 2;
