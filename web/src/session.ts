/**
 * Signing in: the application is a public OAuth client of Dirigo (RFC 6749 §4.1 with PKCE, RFC 7636).
 * Tokens live in this module's memory only; what survives a redirect in sessionStorage is the PKCE
 * verifier, the state, the page to return to and the last group, none of which grants anything.
 * Refresh tokens rotate (each refresh answers a new one). The server answers a signed-in member at
 * once, without a consent page (first-party client): a first sign-in, and a group switch (a new
 * authorization request naming the group).
 */
import { safeReturnTo } from './return-to.ts';

export interface AppConfig {
  clientId: string;
  issuer: string;
  publicUrl: string;
  basePath: string;
}

export interface Tokens {
  accessToken: string;
  refreshToken: string | undefined;
  idToken: string | undefined;
  group: string;
  setup: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

const PENDING = 'dirigo.pending';
const LAST_CHOICE = 'dirigo.group';

let config: AppConfig | undefined;
let tokens: Tokens | undefined;
let refreshing: Promise<Tokens> | undefined;
let refreshTimer: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<() => void>();

export function appConfig(): AppConfig {
  if (!config) throw new Error('the configuration is not loaded');
  return config;
}

export async function loadConfig(): Promise<AppConfig> {
  const res = await fetch('config.json', { headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`config.json answered ${res.status}`);
  config = (await res.json()) as AppConfig;
  return config;
}

export function currentTokens(): Tokens | undefined {
  return tokens;
}

export function onTokens(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function redirectUri(): string {
  const c = appConfig();
  return `${c.publicUrl}${c.basePath}callback`;
}

function base64url(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomText(bytes = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** Sends the browser to the authorization endpoint; it comes back to /callback, then to `returnTo`. */
export async function signIn(options: { group?: string | undefined; setup?: string | undefined; returnTo?: string } = {}): Promise<never> {
  const c = appConfig();
  const verifier = randomText(48);
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  const state = randomText(16);
  // The address opened, so that a shared link shows its page once signed in.
  const returnTo = safeReturnTo(options.returnTo ?? location.pathname + location.search, c.basePath, location.origin);
  sessionStorage.setItem(PENDING, JSON.stringify({ state, verifier, returnTo }));
  const url = new URL('/oauth2/auth', c.publicUrl);
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: c.clientId,
    redirect_uri: redirectUri(),
    // The group scope gives the token the rights of the chosen group; openid alone would only sign in.
    scope: 'openid wlcg.groups',
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };
  if (options.group) params.group = options.group;
  if (options.setup) params.setup = options.setup;
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  location.assign(url.toString());
  return new Promise<never>(() => {});
}

interface TokenAnswer {
  access_token: string;
  refresh_token?: string;
  id_token?: string;
  expires_in: number;
  group: string;
  setup: string;
}

async function tokenRequest(form: Record<string, string>): Promise<Tokens> {
  const res = await fetch('/oauth2/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ ...form, client_id: appConfig().clientId }),
  });
  const body = (await res.json().catch(() => ({}))) as Partial<TokenAnswer> & { error?: string; error_description?: string };
  if (!res.ok || !body.access_token) throw new Error(body.error_description ?? body.error ?? `the token endpoint answered ${res.status}`);
  return {
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    idToken: body.id_token ?? tokens?.idToken,
    group: body.group ?? '',
    setup: body.setup ?? '',
    expiresAt: Date.now() + (body.expires_in ?? 3600) * 1000,
  };
}

function keep(next: Tokens): Tokens {
  tokens = next;
  sessionStorage.setItem(LAST_CHOICE, JSON.stringify({ group: next.group, setup: next.setup }));
  clearTimeout(refreshTimer);
  // Refresh a minute before expiry, so that requests rarely meet an expired token.
  const wait = Math.max(5_000, next.expiresAt - Date.now() - 60_000);
  if (next.refreshToken) refreshTimer = setTimeout(() => void refresh().catch(() => {}), wait);
  for (const l of listeners) l();
  return next;
}

/**
 * Completes a sign-in on /callback: checks state and issuer (RFC 9207 §2.4), redeems the code once.
 * @returns the page to show next: the one the sign-in started from, if it is one of this application's.
 */
export async function completeSignIn(url: URL): Promise<string> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as { state: string; verifier: string; returnTo: string } | null;
  sessionStorage.removeItem(PENDING);
  const error = url.searchParams.get('error');
  if (error) throw new Error(url.searchParams.get('error_description') ?? error);
  if (!pending || url.searchParams.get('state') !== pending.state) throw new Error('This sign-in was not started here, or was already completed. Sign in again.');
  const iss = url.searchParams.get('iss');
  if (iss !== null && iss !== appConfig().issuer) throw new Error(`The answer came from ${iss}, not from ${appConfig().issuer}.`);
  const code = url.searchParams.get('code');
  if (!code) throw new Error('The answer has no authorization code.');
  keep(await tokenRequest({ grant_type: 'authorization_code', code, redirect_uri: redirectUri(), code_verifier: pending.verifier }));
  return safeReturnTo(pending.returnTo, appConfig().basePath, location.origin);
}

/** A new access token from the refresh token (rotated); concurrent callers share one request. */
export function refresh(): Promise<Tokens> {
  const held = tokens;
  if (!held?.refreshToken) return Promise.reject(new Error('not signed in'));
  refreshing ??= tokenRequest({ grant_type: 'refresh_token', refresh_token: held.refreshToken })
    .then(keep)
    .finally(() => {
      refreshing = undefined;
    });
  return refreshing;
}

/** The group and setup of the last sign-in in this tab, to sign in again after a reload. */
export function lastChoice(): { group: string; setup: string } | undefined {
  return (JSON.parse(sessionStorage.getItem(LAST_CHOICE) ?? 'null') as { group: string; setup: string } | null) ?? undefined;
}

/** Revokes the refresh token (RFC 7009), then ends the sign-in at the server (RP-initiated logout). */
export async function signOut(): Promise<never> {
  const c = appConfig();
  const held = tokens;
  tokens = undefined;
  clearTimeout(refreshTimer);
  sessionStorage.removeItem(LAST_CHOICE);
  if (held?.refreshToken) {
    await fetch('/oauth2/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: held.refreshToken, token_type_hint: 'refresh_token', client_id: c.clientId }),
    }).catch(() => undefined);
  }
  const url = new URL('/oauth2/logout', c.publicUrl);
  url.searchParams.set('client_id', c.clientId);
  url.searchParams.set('post_logout_redirect_uri', `${c.publicUrl}${c.basePath}`);
  if (held?.idToken) url.searchParams.set('id_token_hint', held.idToken);
  location.assign(url.toString());
  return new Promise<never>(() => {});
}
