/**
 * Appends `path` to `base`, keeping the path `base` already has (`https://idp/auth` +
 * `realms/x/...` → `https://idp/auth/realms/x/...`). `new URL(path, base)` would drop the base's
 * last segment, which breaks gateways and Keycloaks mounted under a prefix.
 */
export function joinUrl(base: URL | string, path: string): URL {
  const url = new URL(String(base));
  const basePath = url.pathname.replace(/\/+$/, '');
  url.pathname = `${basePath}/${path.replace(/^\/+/, '')}`;
  return url;
}
