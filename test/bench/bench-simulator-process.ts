import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { GatewaySimulatorOptions, SimulatorCounters, SimulatorCredentials } from '../../src/simulator/gateway-simulator.js';
import type { RawUpstream } from './raw-json-slices.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('simulator-child.ts', import.meta.url));

/** What the simulator process did between `reset()` and `close()`. */
export interface SimulatorUsage {
  /** CPU time the simulator process spent (user + system). */
  readonly cpuMs: number;
  readonly counters: SimulatorCounters;
  /** How late the simulator's event loop ran (p99 and worst), in ms: how late an arrival may have been stamped. */
  readonly loopDelayMs: { readonly p99: number; readonly max: number };
}

/** The bundled simulator running in a process of its own. */
export interface SimulatorProcess {
  readonly url: string;
  readonly authUrl: string;
  readonly realm: string;
  readonly credentials: SimulatorCredentials;
  /** The `REPORT_*` variables that point report-sync at it. */
  readonly env: Record<string, string>;
  /** The same, for the raw baselines. */
  readonly upstream: RawUpstream;
  /** Counters and CPU time start from zero again. */
  reset(): Promise<void>;
  /** What it did since the last reset. */
  usage(): Promise<SimulatorUsage>;
  /** When each export request since the last reset arrived (ms since the epoch, the simulator's clock), oldest first. */
  exportRequestTimes(): Promise<number[]>;
  /** Stops the process; resolves with what it did since the last reset. */
  close(): Promise<SimulatorUsage>;
}

/**
 * Starts the gateway simulator in a child process, so that the side being measured (product or
 * baseline) has its process to itself, as it would against a real upstream; the simulator's own
 * CPU time is reported so a reader can tell whether the upstream was the bottleneck.
 */
export async function startSimulatorProcess(options: GatewaySimulatorOptions): Promise<SimulatorProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(options)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const nextLine = async (): Promise<unknown> => {
    const line = await Promise.race([lines.next(), exited.then(() => ({ done: true as const, value: undefined }))]);
    if (line.done) throw new Error('the simulator process ended before answering');
    return JSON.parse(line.value) as unknown;
  };
  let started: { url: string; authUrl: string; realm: string; credentials: SimulatorCredentials };
  try {
    started = (await nextLine()) as typeof started;
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const { credentials } = started;
  return {
    ...started,
    env: {
      REPORT_BASE_URL: started.url,
      REPORT_AUTH_URL: started.authUrl,
      REPORT_REALM: started.realm,
      REPORT_CLIENT_ID: credentials.clientId,
      REPORT_CLIENT_SECRET: credentials.clientSecret,
      REPORT_USERNAME: credentials.username,
      REPORT_PASSWORD: credentials.password,
      REPORT_TENANT_ID: credentials.tenantId,
    },
    upstream: {
      baseUrl: started.url,
      tokenUrl: `${started.authUrl}/realms/${encodeURIComponent(started.realm)}/protocol/openid-connect/token`,
      clientId: credentials.clientId,
      clientSecret: credentials.clientSecret,
      username: credentials.username,
      password: credentials.password,
      tenantId: credentials.tenantId,
    },
    async reset() {
      child.stdin!.write('reset\n');
      await nextLine();
    },
    async usage() {
      child.stdin!.write('usage\n');
      return (await nextLine()) as unknown as SimulatorUsage;
    },
    async exportRequestTimes() {
      child.stdin!.write('times\n');
      return (await nextLine()) as number[];
    },
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error('the simulator process had already ended');
      child.stdin!.end();
      const timeout = setTimeout(() => child.kill('SIGKILL'), 10_000);
      try {
        const usage = (await nextLine()) as unknown as SimulatorUsage;
        await exited;
        return usage;
      } finally {
        clearTimeout(timeout);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    },
  };
}
