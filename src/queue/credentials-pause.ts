import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'bullmq';
import type { TokenSource } from '../auth/token-source.js';
import { SyncError } from '../errors.js';
import type { Logger } from '../logger.js';

export interface CredentialsPauseOptions {
  /** The worker to pause and resume; created after this. */
  readonly worker: () => Worker;
  /** The fleet's token source: while the refusal is remembered in Redis it fails at once, without asking. */
  readonly tokens: TokenSource;
  /** `token.rejectedRetryMs`. */
  readonly retryMs: number;
  readonly logger: Logger;
  readonly shutdown: AbortSignal;
}

/** How often a paused worker looks whether the fleet may ask again (a Redis read, no token request). */
const LOOK_EVERY_MS = 5_000;

/**
 * A worker's answer to refused credentials: it stops taking jobs (the jobs stay queued), reports
 * itself not ready, and lets the fleet ask the identity provider again once per
 * `token.rejectedRetryMs` (the refusal is shared through Redis), instead of exiting into a restart
 * loop that would get the account locked by the provider's brute-force protection. Once a token is
 * issued again, it takes jobs again.
 */
export class CredentialsPause {
  readonly #options: CredentialsPauseOptions;
  #refusal: string | undefined;
  #probing: Promise<void> | undefined;

  constructor(options: CredentialsPauseOptions) {
    this.#options = options;
  }

  /** Why the worker takes no jobs, for `/readyz`; undefined while the credentials are accepted. */
  get refusal(): string | undefined {
    return this.#refusal;
  }

  /** Says the identity provider refused the credentials; the first call pauses the worker. */
  refused(error: SyncError): void {
    const first = this.#refusal === undefined;
    this.#refusal = `the identity provider refused the credentials: ${error.message}`;
    if (!first) return;
    const { logger, retryMs } = this.#options;
    logger.error(
      { code: error.code, err: error, retryEveryMs: retryMs },
      `the identity provider refused the credentials: this worker takes no jobs (they stay queued) and the fleet asks again once every token.rejectedRetryMs (${Math.round(retryMs / 1000)} s) until they are accepted. ` +
        'Fix REPORT_CLIENT_ID, REPORT_CLIENT_SECRET, REPORT_USERNAME or REPORT_PASSWORD (in .env) and restart the workers, or wait for the next try',
    );
    // Not waiting for the jobs in flight: this is called from inside one of them.
    void this.#options.worker().pause(true);
    this.#probing = this.#probe();
  }

  /** Resolves once no probe is running (after a shutdown). */
  async stopped(): Promise<void> {
    await this.#probing;
  }

  async #probe(): Promise<void> {
    const { logger, shutdown, tokens } = this.#options;
    while (this.#refusal !== undefined && !shutdown.aborted) {
      await sleep(Math.min(LOOK_EVERY_MS, this.#options.retryMs), undefined, { signal: shutdown }).catch(() => undefined);
      if (shutdown.aborted) return;
      try {
        await tokens.getToken();
      } catch (error) {
        if (error instanceof SyncError && error.code === 'AUTH_REJECTED') this.#refusal = `the identity provider refused the credentials: ${error.message}`;
        // Anything else (the provider down, Redis trouble) is said where it happens; look again later.
        continue;
      }
      this.#refusal = undefined;
      logger.info('the identity provider accepts the credentials again: taking jobs again');
      this.#options.worker().resume();
    }
  }
}
