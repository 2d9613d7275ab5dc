import { ConfigError, SyncError } from '../errors/sync-error.js';
import type { IssuedToken, TokenSource } from './token-source.js';

/** Socket codes that say nothing is at the address at all (no listener, no such host name). */
const NOTHING_THERE: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND']);

/**
 * Tells a wrong identity-provider address from an outage: a refused connection or unknown host
 * before any token came from that address (here or via the shared cache) is configuration,
 * reported at once (`CONFIG_INVALID`, exit 2) rather than waited out for `token.unavailableWaitMs`.
 */
export class FirstContactGuard {
  readonly #tokenUrl: URL;
  #tokenSeen = false;

  constructor(tokenUrl: URL) {
    this.#tokenUrl = tokenUrl;
  }

  /** The password grant, with the first contact checked. */
  issue(grant: () => Promise<IssuedToken>): () => Promise<IssuedToken> {
    return async () => {
      try {
        const issued = await grant();
        this.#tokenSeen = true;
        return issued;
      } catch (error) {
        const code = socketCode(error);
        if (!this.#tokenSeen && code !== undefined && NOTHING_THERE.has(code)) {
          throw new ConfigError(
            `nothing answers at the identity provider's address ${this.#tokenUrl.origin} (${code}), and no token was ever obtained from it: ` +
              'check REPORT_AUTH_URL and REPORT_REALM (or REPORT_TOKEN_URL)',
            { cause: error },
          );
        }
        throw error;
      }
    };
  }

  /** The token source, noting when it hands out a token (a cached one counts: the address worked for the fleet). */
  tokens(source: TokenSource): TokenSource {
    const seen = (token: string) => {
      this.#tokenSeen = true;
      return token;
    };
    return {
      getToken: () => source.getToken().then(seen),
      renewAfterRejection: (rejected) => source.renewAfterRejection(rejected).then(seen),
    };
  }
}

function socketCode(error: unknown): string | undefined {
  const cause = error instanceof SyncError ? error.cause : error;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
