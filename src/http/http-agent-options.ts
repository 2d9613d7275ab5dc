/** How the process's keep-alive pool connects and waits (the `http.*` settings have this shape). */
export interface HttpAgentOptions {
  readonly connections: number;
  readonly keepAliveTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Verify TLS certificates. */
  readonly verifyTls: boolean;
}
