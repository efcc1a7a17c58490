/**
 * Typed calls of the Dirigo API: the same OpenAPI document the server serves, through openapi-fetch (as
 * packages/client does for Node). Every request carries the access token; a 401 refreshes it once and
 * sends the request again.
 */
import createClient from 'openapi-fetch';
import type { paths } from '@dirigo/client/schema';
import { currentTokens, lastChoice, refresh, signIn } from './session.ts';

/** An error answer of the API, with its stable code and description. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, description: string) {
    super(description);
    this.status = status;
    this.code = code;
  }
}

function withToken(request: Request): Request {
  const token = currentTokens()?.accessToken;
  if (token) request.headers.set('authorization', `Bearer ${token}`);
  return request;
}

/**
 * fetch with the bearer token, refreshed and retried once on 401. When the refresh token is refused too
 * (revoked, or reused elsewhere so that the server ended the grant), the browser signs in again: with a
 * live sign-in at the server that is two redirects back to the same page.
 */
export async function authorizedFetch(input: Request): Promise<Response> {
  const again = input.clone();
  const res = await fetch(withToken(input));
  if (res.status !== 401 || !currentTokens()?.refreshToken) return res;
  try {
    await refresh();
  } catch {
    return signIn(lastChoice() ?? {});
  }
  return fetch(withToken(again));
}

export const api = createClient<paths>({ baseUrl: location.origin, fetch: authorizedFetch });

/** The data of a successful answer, or an ApiError with the server's own description. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    const e = (result.error ?? {}) as { error?: string; error_description?: string };
    throw new ApiError(result.response.status, e.error ?? 'error', e.error_description ?? `the server answered ${result.response.status}`);
  }
  return result.data;
}

/** A catalogue path as the API takes it: URL-safe base 64 of its UTF-8 bytes (RFC 4648 §5). */
export function cataloguePath(path: string): string {
  let text = '';
  for (const b of new TextEncoder().encode(path)) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Saves a response body as a file the browser downloads. */
export async function saveResponse(res: Response, fallbackName: string): Promise<void> {
  if (!res.ok) {
    const e = (await res.json().catch(() => ({}))) as { error?: string; error_description?: string };
    throw new ApiError(res.status, e.error ?? 'error', e.error_description ?? `the server answered ${res.status}`);
  }
  const disposition = res.headers.get('content-disposition') ?? '';
  const name = /filename="?([^";]+)"?/.exec(disposition)?.[1] ?? fallbackName;
  const url = URL.createObjectURL(await res.blob());
  const link = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
