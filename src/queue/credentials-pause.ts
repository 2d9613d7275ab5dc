import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'bullmq';
import type { RedisClient } from './redis-connection.js';
import type { TokenSource } from '../auth/token-source.js';
import { SyncError } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';
import { describeSlice, type Slice } from '../slice/slice.js';

export interface CredentialsPauseOptions {
  /** The worker to pause and resume; created after this. */
  readonly worker: () => Worker;
  /** The fleet's token source: while the refusal is remembered in Redis it fails at once, without asking. */
  readonly tokens: TokenSource;
  /**
   * Asks the export endpoint for `slice` once, the way a job would (renewing the token on a 401),
   * and discards the answer: resolves or throws what a job would have met. The probe of a token
   * refusal: only the export endpoint can say whether it accepts our tokens again.
   */
  readonly probeExport: (slice: Slice) => Promise<void>;
  /** Where the fleet shares a token refusal and the pace of its probes. */
  readonly redis: RedisClient;
  /** The queue's key prefix, shared by the fleet. */
  readonly prefix: string;
  /** `token.rejectedRetryMs`: the fleet asks again at most once per this. */
  readonly retryMs: number;
  readonly logger: Logger;
  readonly shutdown: AbortSignal;
}

/** How often a paused worker looks whether the fleet may ask again (a Redis read, no request upstream). */
const LOOK_EVERY_MS = 5_000;

/** The refusal a worker is paused for. */
interface Refusal {
  /** `AUTH_REJECTED`: the identity provider refused the credentials; `EXPORT_UNAUTHORIZED`: the export endpoint a fresh token. */
  readonly code: 'AUTH_REJECTED' | 'EXPORT_UNAUTHORIZED';
  /** For `/readyz`. */
  reason: string;
  /** The slice whose job met it, asked again by the probe of a token refusal. */
  readonly slice: Slice;
}

/** What the fleet shares about a token refusal under {@link exportRefusalKey}. */
interface SharedExportRefusal {
  readonly message: string;
  readonly slice: Slice;
}

/**
 * A worker's answer to credential trouble every job would meet (`AUTH_REJECTED`, or
 * `EXPORT_UNAUTHORIZED` after a renewal): stop taking jobs and probe once per `token.rejectedRetryMs`,
 * one worker for the fleet through Redis. Never exit: that downs the fleet on one misjudged answer
 * and, under a restart policy, loops until brute-force protection locks the account.
 */
export class CredentialsPause {
  readonly #options: CredentialsPauseOptions;
  #refusal: Refusal | undefined;
  #probing: Promise<void> | undefined;

  constructor(options: CredentialsPauseOptions) {
    this.#options = options;
  }

  /**
   * Forgets the refusals the fleet remembers. A worker started (again) is how an operator says the
   * credentials or the tenant were fixed: it asks once more now instead of waiting out the pace.
   * @returns how many were forgotten
   */
  static async forgetRefusals(redis: RedisClient, prefix: string): Promise<number> {
    return redis.del(`${prefix}:token:credentials-refused`, exportRefusalKey(prefix), nextProbeKey(prefix));
  }

  /** Why the worker takes no jobs, for `/readyz`; undefined while the upstream accepts. */
  get refusal(): string | undefined {
    return this.#refusal?.reason;
  }

  /**
   * Says a job met credential trouble (`AUTH_REJECTED` or `EXPORT_UNAUTHORIZED`) for `slice`; the
   * first call pauses the worker. Never throws: the job is put back whatever Redis does.
   */
  async refused(error: SyncError, slice: Slice): Promise<void> {
    const code = error.code === 'AUTH_REJECTED' ? 'AUTH_REJECTED' : 'EXPORT_UNAUTHORIZED';
    const first = this.#refusal === undefined;
    this.#refusal = { code, reason: reasonOf(code, error.message), slice };
    if (code === 'EXPORT_UNAUTHORIZED') await this.#shareExportRefusal(error.message, slice);
    if (!first) return;
    const { logger, retryMs } = this.#options;
    const every = `once every token.rejectedRetryMs (${Math.round(retryMs / 1000)} s)`;
    if (code === 'AUTH_REJECTED') {
      logger.error(
        { code, err: error, retryEveryMs: retryMs },
        `the identity provider refused the credentials: this worker takes no jobs (they stay queued) and the fleet asks again ${every} until they are accepted. ` +
          'Fix REPORT_CLIENT_ID, REPORT_CLIENT_SECRET, REPORT_USERNAME or REPORT_PASSWORD (in .env) and restart the workers, or wait for the next try',
      );
    } else {
      logger.error(
        { code, err: error, retryEveryMs: retryMs },
        `the export endpoint refused a freshly issued token: this worker takes no jobs (they stay queued) and the fleet asks the export endpoint again ${every} until it accepts. ` +
          'Check REPORT_TENANT_ID, REPORT_CLIENT_ID and the account’s permissions (in .env) and restart the workers, or wait for the next try',
      );
    }
    // Not waiting for the jobs in flight: this is called from inside one of them.
    void this.#options.worker().pause(true);
    this.#probing = this.#probe();
  }

  /** Resolves once no probe is running (after a shutdown). */
  async stopped(): Promise<void> {
    await this.#probing;
  }

  async #probe(): Promise<void> {
    const { shutdown, retryMs } = this.#options;
    while (this.#refusal !== undefined && !shutdown.aborted) {
      await sleep(Math.min(LOOK_EVERY_MS, retryMs), undefined, { signal: shutdown }).catch(() => undefined);
      if (shutdown.aborted) return;
      const accepted = this.#refusal.code === 'AUTH_REJECTED' ? await this.#probeCredentials() : await this.#probeExport(this.#refusal);
      if (accepted) this.#resume(accepted);
    }
  }

  /** Whether a token is issued again (the token source asks at most once per pace, for the fleet). */
  async #probeCredentials(): Promise<string | undefined> {
    try {
      await this.#options.tokens.getToken();
      return 'the identity provider accepts the credentials again';
    } catch (error) {
      if (error instanceof SyncError && error.code === 'AUTH_REJECTED') this.#refusal!.reason = reasonOf('AUTH_REJECTED', error.message);
      // Anything else (the provider down, Redis trouble) is said where it happens; look again later.
      return undefined;
    }
  }

  /**
   * Whether the export endpoint accepts our tokens again: learnt from the fleet (the refusal it
   * shares is gone), or asked by this worker when the fleet's next probe is due and it claims it.
   */
  async #probeExport(refusal: Refusal): Promise<string | undefined> {
    const { redis, prefix, retryMs, logger } = this.#options;
    try {
      const shared = await redis.get(exportRefusalKey(prefix));
      if (shared === null) return 'another worker found that the export endpoint accepts the token again';
      if ((await redis.set(nextProbeKey(prefix), '1', 'PX', retryMs, 'NX')) !== 'OK') return undefined;
    } catch {
      // Redis trouble is said by its connector; look again later.
      return undefined;
    }
    try {
      await this.#options.probeExport(refusal.slice);
    } catch (error) {
      if (!(error instanceof SyncError)) {
        logger.error({ err: error }, 'could not ask the export endpoint whether it accepts the token again');
        return undefined;
      }
      if (error.code === 'EXPORT_UNAUTHORIZED') {
        refusal.reason = reasonOf('EXPORT_UNAUTHORIZED', error.message);
        await this.#shareExportRefusal(error.message, refusal.slice);
        logger.warn({ code: error.code, retryEveryMs: retryMs }, 'the export endpoint still refuses the token: asking again after token.rejectedRetryMs');
        return undefined;
      }
      if (error.code === 'AUTH_REJECTED') {
        // The credentials themselves are refused now: wait for those, at the token source's pace.
        this.#refusal = { code: 'AUTH_REJECTED', reason: reasonOf('AUTH_REJECTED', error.message), slice: refusal.slice };
        return undefined;
      }
      if (error.retryable || error.code === 'INTERRUPTED') {
        // No answer, or trouble that says nothing about the token: ask again at the next probe.
        logger.warn({ code: error.code, ...refusal.slice }, 'could not learn whether the export endpoint accepts the token again; asking again after token.rejectedRetryMs');
        return undefined;
      }
      // Any other answer (403, 404…) got past the token check: the job itself will say what it means.
    }
    try {
      await redis.del(exportRefusalKey(prefix));
    } catch {
      // The other workers then probe for themselves once Redis answers.
    }
    return `the export endpoint accepts the token again (asked for ${describeSlice(refusal.slice)})`;
  }

  #resume(why: string): void {
    this.#refusal = undefined;
    this.#options.logger.info(`${why}: taking jobs again`);
    this.#options.worker().resume();
  }

  /** Tells the fleet the export endpoint refuses our tokens; the refusal counts as its latest probe. */
  async #shareExportRefusal(message: string, slice: Slice): Promise<void> {
    const { redis, prefix, retryMs } = this.#options;
    const shared: SharedExportRefusal = { message, slice };
    try {
      await redis.set(exportRefusalKey(prefix), JSON.stringify(shared));
      await redis.set(nextProbeKey(prefix), '1', 'PX', retryMs, 'NX');
    } catch {
      // Without Redis this worker still pauses and probes by itself; the connector says Redis is down.
    }
  }
}

function reasonOf(code: Refusal['code'], message: string): string {
  return code === 'AUTH_REJECTED' ? `the identity provider refused the credentials: ${message}` : `the export endpoint refused a freshly issued token: ${message}`;
}

/** The export endpoint's refusal of the fleet's tokens, until a probe finds it accepting again. */
function exportRefusalKey(prefix: string): string {
  return `${prefix}:token:export-refused`;
}

/** Held for `token.rejectedRetryMs` after each refusal or probe: while it exists, nobody probes. */
function nextProbeKey(prefix: string): string {
  return `${prefix}:token:export-probe-pace`;
}
