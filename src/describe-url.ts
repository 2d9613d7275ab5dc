import { writtenUserinfo } from './written-userinfo.js';

/** What stands for a password that was cut out. */
const CENSOR = '[redacted]';

/**
 * A URL-like setting as it may be shown in a message, a log line, an alert or the dashboard: no
 * password, and no query or fragment either (a `?password=` parameter is read by pg, and a
 * password holding "#" leaves its tail in the fragment). A well-formed URL is shown as URL reads
 * it, without its password (`postgres://u@host/db`). A URL typed wrong (`postgres:/u:pw@host/db`,
 * `u:pw@host:5432/db`, or a password holding "/" that URL reads as a port and a path) is shown as
 * written with its password replaced (`postgres:/u:[redacted]@host/db`), so whoever reads it can
 * see the typo. Undefined when the text is not a URL at all.
 */
export function describeUrl(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const written = writtenUserinfo(raw);
  if (written && !parsedWhole(url, written.user, written.password)) {
    const tail = raw.slice(written.at).split(/[?#]/)[0]!;
    const password = written.password === undefined ? '' : written.password === '' ? ':' : `:${CENSOR}`;
    return `${raw.slice(0, written.start)}${written.user}${password}${tail}`;
  }
  url.password = '';
  url.search = '';
  url.hash = '';
  return url.href;
}

/** Whether URL found the userinfo where the text has it, so the password it removes is the whole one. */
function parsedWhole(url: URL, user: string, password: string | undefined): boolean {
  return `${url.username}${url.password ? `:${url.password}` : ''}` === `${user}${password ? `:${password}` : ''}`;
}
