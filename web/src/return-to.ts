/**
 * The page to show after signing in: the address the user opened (path and query), kept in
 * sessionStorage across the authorization server's redirects. Only a page of this application at this
 * origin is accepted, so that nothing read back from storage can send the browser elsewhere (no open
 * redirect), and never the callback itself (it would redeem a spent code).
 */
export function safeReturnTo(value: unknown, base: string, origin: string): string {
  // A scheme-relative or backslashed path could name another host once resolved.
  if (typeof value !== 'string' || !value.startsWith('/') || value.startsWith('//') || value.includes('\\')) return base;
  let url: URL;
  try {
    url = new URL(value, origin);
  } catch {
    return base;
  }
  // The URL parser has resolved any `..`: what is left must still be under the base.
  if (url.origin !== origin || !url.pathname.startsWith(base) || url.pathname === `${base}callback`) return base;
  return url.pathname + url.search;
}
