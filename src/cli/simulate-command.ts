import { once } from 'node:events';
import { createGatewaySimulator } from '../simulator/gateway-simulator.js';
import type { CliIo } from './cli-io.js';

/** `report-sync simulate`: the bundled gateway simulator, until interrupted. */
export async function simulateCommand(options: { port: number; tokenLifetime: number }, io: CliIo): Promise<number> {
  const simulator = await createGatewaySimulator({ port: options.port, tokenLifetimeSeconds: options.tokenLifetime });
  const { credentials } = simulator;
  io.stdout.write(
    [
      `Gateway simulator listening on ${simulator.url} (tokens live ${options.tokenLifetime} s). Point report-sync at it with:`,
      '',
      `REPORT_BASE_URL=${simulator.url}`,
      `REPORT_AUTH_URL=${simulator.authUrl}`,
      `REPORT_REALM=${simulator.realm}`,
      `REPORT_CLIENT_ID=${credentials.clientId}`,
      `REPORT_CLIENT_SECRET=${credentials.clientSecret}`,
      `REPORT_USERNAME=${credentials.username}`,
      `REPORT_PASSWORD=${credentials.password}`,
      `REPORT_TENANT_ID=${credentials.tenantId}`,
      '',
      'Weekends answer with an empty body (no data). Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
  try {
    if (io.signal && !io.signal.aborted) await once(io.signal, 'abort');
  } finally {
    await simulator.close();
  }
  return 0;
}
