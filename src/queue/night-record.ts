import type { RedisClient } from './redis-connection.js';

/** Where the fleet keeps when its last wholly successful night finished. */
function lastNightKey(prefix: string): string {
  return `${prefix}:night:last-success`;
}

/**
 * Records that a night ended with every slice loaded or no_data (unix seconds of its end, and its
 * report date), for every worker's `report_sync_last_successful_night_timestamp_seconds`.
 */
export async function recordSuccessfulNight(redis: RedisClient, prefix: string, reportDate: string, at: Date): Promise<void> {
  await redis.set(lastNightKey(prefix), JSON.stringify({ reportDate, at: Math.floor(at.getTime() / 1000) }));
}

/** Unix seconds at which the fleet's last wholly successful night finished, if one did. */
export async function lastSuccessfulNight(redis: RedisClient, prefix: string): Promise<number | undefined> {
  const text = await redis.get(lastNightKey(prefix));
  if (!text) return undefined;
  const at = (JSON.parse(text) as { at?: unknown }).at;
  return typeof at === 'number' ? at : undefined;
}
