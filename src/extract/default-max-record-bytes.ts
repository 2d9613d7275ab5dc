/** `limits.maxRecordBytes` when a reader is given none: 1 MiB, as the settings' default. */
export const DEFAULT_MAX_RECORD_BYTES = 1024 ** 2;
