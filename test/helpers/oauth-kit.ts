/**
 * Test kit for the authorization server: a service with OAuth clients and local passwords, and a small
 * browser (cookies, redirects by hand, HTML forms) that walks the login and consent pages as a user would.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { hashSecret } from '../../src/registry/passwords.ts';
import { startTestService, testRegistry, type TestService } from './service.ts';
import type { TestDialect } from './dialects.ts';

export const PASSWORDS: Record<string, string> = { alice: 'alice-password-1', bob: 'bob-password-2', carol: 'carol-password-3' };
export const WEB_SECRET = 'web-client-secret-0123456789';
export const OTHER_SECRET = 'other-client-secret-0123456789';
export const RS_SECRET = 'resource-server-secret-0123456789';
export const ALL_GRANTS = ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code', 'urn:ietf:params:oauth:grant-type:token-exchange'];

let hashes: Promise<Record<string, string>> | undefined;

function secretHashes(): Promise<Record<string, string>> {
  hashes ??= (async () => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...PASSWORDS, web: WEB_SECRET, other: OTHER_SECRET, rs: RS_SECRET })) out[k] = await hashSecret(v);
    return out;
  })();
  return hashes;
}

/** oauthConfig with `defaultGroup` (registry.users[].defaultGroup) set for one user. */
export async function oauthConfigWithDefaultGroup(user: string, group: string): Promise<Record<string, unknown>> {
  const config = await oauthConfig();
  const registry = config.registry as { users: { name: string }[] };
  registry.users = registry.users.map((u) => (u.name === user ? { ...u, defaultGroup: group } : u));
  return config;
}

export async function oauthConfig(extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const h = await secretHashes();
  const registry = testRegistry();
  return {
    registry: { ...registry, users: registry.users.map((u) => (h[u.name] ? { ...u, passwordHash: h[u.name] } : u)) },
    clients: [
      { clientId: 'test-public', name: 'Test native app', type: 'public', redirectUris: ['http://127.0.0.1/callback'], grants: ALL_GRANTS },
      {
        clientId: 'test-web',
        name: 'Test portal',
        type: 'confidential',
        secretHash: h.web,
        redirectUris: ['https://app.example/cb', 'https://app.example/cb2'],
        grants: ALL_GRANTS,
        postLogoutRedirectUris: ['https://app.example/bye'],
        revokeOnLogout: true,
      },
      { clientId: 'test-other', name: 'Other portal', type: 'confidential', secretHash: h.other, redirectUris: ['https://other.example/cb'], grants: ALL_GRANTS },
      { clientId: 'test-rs', name: 'Resource server', type: 'confidential', secretHash: h.rs, redirectUris: [], grants: [] },
      { clientId: 'test-nodevice', name: 'No device', type: 'public', redirectUris: ['http://127.0.0.1/cb'], grants: ['authorization_code'] },
      // Refresh tokens only when offline_access is asked for (OpenID Connect Core §11).
      { clientId: 'test-offline', name: 'Offline portal', type: 'confidential', secretHash: h.web, redirectUris: ['https://app.example/cb'], grants: ALL_GRANTS, refreshTokens: 'offline_access' },
    ],
    oauth: { deviceInterval: 1, loginAttempts: 3, loginWindow: 60, audiences: ['https://other-service.example'] },
    ...extra,
  };
}

export async function startOAuthService(dialect: TestDialect, extra: Record<string, unknown> = {}): Promise<TestService> {
  return startTestService({ dialect, config: await oauthConfig(extra) });
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export const basic = (id: string, secret: string): string =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

export interface Page {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  location: string | undefined;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Hidden fields of the form posting to `action`, plus the option values of its selects. */
export function formOf(html: string, action: string): { hidden: Record<string, string>; selects: Record<string, string[]> } {
  const start = html.indexOf(`action="${action}"`);
  if (start === -1) throw new Error(`no form posting to ${action} in:\n${html}`);
  const form = html.slice(start, html.indexOf('</form>', start));
  const hidden: Record<string, string> = {};
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) hidden[m[1]!] = m[2]!.replace(/&amp;/g, '&');
  const selects: Record<string, string[]> = {};
  for (const m of form.matchAll(/<select id="[^"]+" name="([^"]+)">(.*?)<\/select>/g)) {
    selects[m[1]!] = [...m[2]!.matchAll(/<option value="([^"]*)"/g)].map((o) => o[1]!);
  }
  return { hidden, selects };
}

/** A browser: keeps cookies (by name), sends them back, does not follow redirects by itself. */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly #base: string;
  readonly #agent: Agent;

  constructor(svc: TestService, cert?: string) {
    this.#base = svc.url;
    const identity = cert ? { cert: svc.pki.users[cert]!.certPem, key: svc.pki.users[cert]!.keyPem } : {};
    this.#agent = new Agent({ connect: { ca: svc.pki.ca.certPem, ...identity } });
  }

  async fetch(pathOrUrl: string, form?: Record<string, string>): Promise<Page> {
    const url = pathOrUrl.startsWith('https://') ? pathOrUrl : this.#base + pathOrUrl;
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await request(url, { method: form ? 'POST' : 'GET', headers, body: form ? new URLSearchParams(form).toString() : undefined, dispatcher: this.#agent });
    const text = await res.body.text();
    const set = res.headers['set-cookie'];
    for (const c of Array.isArray(set) ? set : set ? [set] : []) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/max-age=0/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const location = res.headers.location as string | undefined;
    return { status: res.statusCode, headers: res.headers, text, location, json };
  }

  /** Follows same-origin redirects; stops at the first page or at a redirect leaving the service. */
  async follow(pathOrUrl: string, form?: Record<string, string>): Promise<Page> {
    let page = await this.fetch(pathOrUrl, form);
    for (let i = 0; i < 10 && page.location && (page.location.startsWith('/') || page.location.startsWith(this.#base)); i++) {
      page = await this.fetch(page.location);
    }
    return page;
  }

  /** Submits the password form on a login page. */
  async login(page: Page, username: string, password: string): Promise<Page> {
    const { hidden } = formOf(page.text, '/oauth2/login');
    return this.follow('/oauth2/login', { ...hidden, username, password });
  }

  /** Submits the consent form; returns the redirect (for authorize) or the final page (for devices). */
  async consent(page: Page, decision: 'allow' | 'deny', choice: { group?: string; setup?: string } = {}): Promise<Page> {
    const { hidden, selects } = formOf(page.text, '/oauth2/consent');
    return this.fetch('/oauth2/consent', { ...hidden, group: choice.group ?? selects.group![0]!, setup: choice.setup ?? selects.setup![0]!, decision });
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

export interface AuthorizeOptions {
  clientId?: string;
  redirectUri?: string;
  scope?: string;
  state?: string;
  pkce?: { challenge: string } | false;
  user?: string;
  group?: string;
  setup?: string;
  decision?: 'allow' | 'deny';
  extra?: Record<string, string>;
}

/** Runs /oauth2/auth → login → consent and returns the callback URL the browser was sent to. */
export async function authorize(browser: Browser, o: AuthorizeOptions = {}): Promise<URL> {
  const q = new URLSearchParams({ response_type: 'code', client_id: o.clientId ?? 'test-public' });
  if (o.redirectUri !== undefined) q.set('redirect_uri', o.redirectUri);
  if (o.scope) q.set('scope', o.scope);
  q.set('state', o.state ?? 'st-123');
  if (o.pkce !== false) {
    q.set('code_challenge', (o.pkce ?? pkcePair()).challenge);
    q.set('code_challenge_method', 'S256');
  }
  for (const [k, v] of Object.entries(o.extra ?? {})) q.set(k, v);
  let page = await browser.follow(`/oauth2/auth?${q}`);
  if (page.text.includes('action="/oauth2/login"')) {
    const user = o.user ?? 'alice';
    page = await browser.login(page, user, PASSWORDS[user]!);
  }
  if (page.status !== 200 || !page.text.includes('action="/oauth2/consent"')) throw new Error(`expected the consent page, got ${page.status}: ${page.location ?? page.text.slice(0, 500)}`);
  const answer = await browser.consent(page, o.decision ?? 'allow', { group: o.group, setup: o.setup });
  if (answer.status !== 303 || !answer.location) throw new Error(`consent did not redirect: ${answer.status} ${answer.text.slice(0, 300)}`);
  return new URL(answer.location);
}

/** POSTs a form to the service with optional Basic authentication. */
export async function postForm(svc: TestService, path: string, form: Record<string, string>, auth?: string) {
  return svc.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth ? { authorization: auth } : {}) },
    body: new URLSearchParams(form).toString(),
  });
}

/** Enters the user code on the verification page, signs in and answers the consent page. */
export async function approveDevice(browser: Browser, userCode: string, decision: 'allow' | 'deny', user = 'alice', group?: string) {
  const entry = await browser.follow(`/oauth2/device?user_code=${encodeURIComponent(userCode)}`);
  assert.equal(entry.status, 200);
  assert.match(entry.text, /<label for="user_code">/);
  const { hidden } = formOf(entry.text, '/oauth2/device/verify');
  let page = await browser.follow('/oauth2/device/verify', { ...hidden, user_code: userCode });
  if (page.text.includes('action="/oauth2/login"')) page = await browser.login(page, user, PASSWORDS[user]!);
  assert.match(page.text, /on a device/);
  return browser.consent(page, decision, { group });
}
