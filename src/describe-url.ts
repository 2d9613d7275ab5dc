/**
 * A connection URL as it may be shown in a message or a log line: no password, and no query or
 * fragment either (a `?password=` parameter is read by pg, and a password holding "#" leaves its
 * tail in the fragment). Undefined when the text is not a URL.
 */
export function describeUrl(raw: string): string | undefined {
  try {
    const url = new URL(raw);
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.href;
  } catch {
    return undefined;
  }
}
