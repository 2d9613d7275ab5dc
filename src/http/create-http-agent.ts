import { Agent, type Dispatcher } from 'undici';
import type { HttpAgentOptions } from './http-agent-options.js';

/**
 * The keep-alive connection pool every request of the process goes through (token and export
 * requests alike). Its owner closes it.
 */
export function createHttpAgent(http: HttpAgentOptions): Dispatcher {
  return new Agent({
    connections: http.connections,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    headersTimeout: http.headersTimeoutMs,
    bodyTimeout: http.bodyTimeoutMs,
    connect: { timeout: http.connectTimeoutMs, rejectUnauthorized: http.verifyTls },
  });
}
