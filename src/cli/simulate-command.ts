import { once } from 'node:events';
import { createGatewaySimulator, simulatorEnvironment } from '../simulator/gateway-simulator.js';
import type { CliIo } from './cli-io.js';

/** `report-sync simulate`: the bundled gateway simulator, until interrupted. */
export async function simulateCommand(options: { port: number; tokenLifetime: number }, io: CliIo): Promise<number> {
  const simulator = await createGatewaySimulator({ port: options.port, tokenLifetimeSeconds: options.tokenLifetime });
  io.stdout.write(
    [
      `Gateway simulator listening on ${simulator.url} (tokens live ${options.tokenLifetime} s). Point report-sync at it with:`,
      '',
      ...Object.entries(simulatorEnvironment(simulator)).map(([name, value]) => `${name}=${value}`),
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
