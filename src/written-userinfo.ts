/** The userinfo of a URL-like text, found where it was written, not where a parser would look. */
export interface WrittenUserinfo {
  /** Index of its first character in the text. */
  readonly start: number;
  /** Index of the "@" that ends it. */
  readonly at: number;
  readonly user: string;
  /** What follows the first ":", when there is one (possibly empty). */
  readonly password: string | undefined;
}

/**
 * The `user[:password]@` part of a URL in whatever shape it was typed: `postgres://u:pw@host`,
 * `postgres:/u:pw@host` (one slash), `redis:/:pw@host`, `u:pw@host:5432/db` and `default:pw@host`
 * (no scheme: the "scheme" is the user). After a scheme and its slashes the userinfo follows them;
 * without slashes everything before the "@" may be userinfo. The last "@" ends it, as a password
 * may hold an "@", "/" or "#" that URL would read as the host, a path or a fragment: this errs
 * towards censoring more. Undefined when the text has no "@".
 */
export function writtenUserinfo(raw: string): WrittenUserinfo | undefined {
  const at = raw.lastIndexOf('@');
  if (at < 0) return undefined;
  const scheme = /^[a-z][a-z0-9+.-]*:\/+/i.exec(raw);
  const start = scheme && scheme[0].length <= at ? scheme[0].length : 0;
  const userinfo = raw.slice(start, at);
  const colon = userinfo.indexOf(':');
  return colon < 0 ? { start, at, user: userinfo, password: undefined } : { start, at, user: userinfo.slice(0, colon), password: userinfo.slice(colon + 1) };
}
