import type { Settings } from '../config/settings-schema.js';
import type { ExportClient } from '../gateway/export-client.js';
import type { Logger } from '../logging/logger.js';
import type { SyncMetrics } from '../metrics/sync-metrics.js';
import type { SliceLoader } from '../warehouse/loading/slice-loader.js';

/** What exporting a slice needs; one set per process, shared by all its slices. */
export interface ExportSliceDeps {
  readonly client: ExportClient;
  readonly loader: SliceLoader;
  readonly settings: Pick<Settings, 'formats' | 'defaultFormat' | 'limits' | 'warehouse' | 'checks'>;
  readonly logger: Logger;
  /** Counts outcomes and retries, when the process exposes metrics. */
  readonly metrics?: SyncMetrics;
}
