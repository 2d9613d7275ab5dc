import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import { createGatewaySimulator, simulatorEnvironment, type GatewaySimulatorOptions } from '../../src/simulator/gateway-simulator.js';
import { openWarehouse, type WarehouseDialect } from '../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import { createTempDatabase } from './temp-warehouse.js';
import { capturedIo, logLines } from './captured-io.js';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly logs: string;
  readonly logLines: Record<string, unknown>[];
}

/** Settings that keep tests quick: short backoff, few attempts. */
export const FAST_SETTINGS: SettingsInput = {
  portfolios: [1001, 1002],
  reportTypes: ['index', 'constituent.close'],
  formats: { index: 'json', 'constituent.close': 'csv' },
  concurrency: 4,
  retry: { attempts: 4, baseDelayMs: 5, maxDelayMs: 20 },
  // An unavailable identity provider is waited for up to 5 minutes by default; tests wait 2 s.
  token: { unavailableWaitMs: 2_000 },
  log: { level: 'info' },
};

/**
 * The bundled simulator plus a project directory of its own (config/, a SQLite warehouse),
 * driving the real CLI entry point in-process. `close()` stops and removes everything.
 */
export async function startSyncRig(options: { simulator?: GatewaySimulatorOptions; settings?: SettingsInput; dialect?: WarehouseDialect } = {}) {
  const simulator = await createGatewaySimulator({ port: 0, ...options.simulator });
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-e2e-'));
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config/default.json'), JSON.stringify({ ...FAST_SETTINGS, ...options.settings }));
  const database = await createTempDatabase(options.dialect ?? 'sqlite');
  const { databaseUrl } = database;
  const env: Record<string, string | undefined> = {
    ...simulatorEnvironment(simulator),
    DATABASE_URL: databaseUrl,
  };
  const warehouses: WarehouseHandle[] = [];

  return {
    simulator,
    dir,
    env,
    databaseUrl,
    /** Runs `report-sync <args>` in-process; `envOverrides` replace variables for this call. */
    async cli(args: string[], envOverrides: Record<string, string | undefined> = {}): Promise<CliResult> {
      const io = capturedIo({ ...env, ...envOverrides }, dir);
      const code = await main(args, io);
      return { code, stdout: io.stdout.text, stderr: io.stderr.text, logs: io.logs.text, logLines: logLines(io.logs) };
    },
    /** The warehouse, opened for assertions (closed by `close()`). */
    async warehouse(): Promise<WarehouseHandle> {
      const warehouse = await openWarehouse(databaseUrl);
      warehouses.push(warehouse);
      return warehouse;
    },
    async close(): Promise<void> {
      for (const warehouse of warehouses) await warehouse.close();
      await simulator.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type SyncRig = Awaited<ReturnType<typeof startSyncRig>>;
