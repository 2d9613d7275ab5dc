import type { Server } from 'node:http';
import { ConfigError } from '../errors/sync-error.js';

/** What a server is for and the setting or flag that picks its port, for the error a failed listen gives. */
export interface ListenPurpose {
  /** e.g. `metrics and health checks`, `the dashboard`. */
  readonly serves: string;
  /** e.g. `metrics.port`, `--port`. */
  readonly portSetting: string;
}

/**
 * Starts `server` listening on host:port and resolves once it does.
 * @throws ConfigError naming host:port, what it was for and the setting to change (EADDRINUSE, EACCES…);
 *   a failed listen leaves no handle behind, so there is nothing to close
 */
export function listenOn(server: Server, host: string, port: number, purpose: ListenPurpose): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(new ConfigError(listenFailure(host, port, purpose, error), { cause: error }));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

function listenFailure(host: string, port: number, { serves, portSetting }: ListenPurpose, error: NodeJS.ErrnoException): string {
  const where = `${host}:${port}`;
  switch (error.code) {
    case 'EADDRINUSE':
      return `cannot serve ${serves} on ${where}: the port is already in use (EADDRINUSE); choose another ${portSetting} (a port of its own for each process, or 0 for any free port) or stop the process holding it`;
    case 'EACCES':
      return `cannot serve ${serves} on ${where}: permission denied (EACCES; ports below 1024 need privileges); choose another ${portSetting}`;
    default:
      return `cannot serve ${serves} on ${where} (${error.code ?? error.message}); check that the host is an address of this machine, or choose another ${portSetting}`;
  }
}
