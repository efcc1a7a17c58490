/**
 * An upstream OpenID provider for federated-login tests: `oidc-provider` from npm over HTTPS with the test
 * PKI's server certificate (so only a process given the test CA trusts it), with real HTML login and
 * consent forms, and a browser that keeps cookies per origin and path (tough-cookie) and follows redirects
 * across the upstream provider and Dirigo as a user agent would.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { generateKeyPair, exportJWK, type JWK } from 'jose';
import { CookieJar } from 'tough-cookie';
import { Agent, request } from 'undici';
import type { TestPki } from './pki.ts';

/* oidc-provider ships no type declarations; the tests use it through this loose shape. */
/* eslint-disable @typescript-eslint/no-explicit-any */
type Any = any;

export interface UpstreamAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  'wlcg.groups'?: string[];
  eduperson_entitlement?: string[];
}

export interface UpstreamClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

export interface UpstreamProvider {
  issuer: string;
  /** Builds the provider once its clients (Dirigo's callback URLs) are known. */
  configure(clients: UpstreamClient[]): Promise<void>;
  /** Token endpoint requests served (to tell that a code was or was not redeemed). */
  tokenRequests: number;
  close(): Promise<void>;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Starts the HTTPS server at once (the issuer URL is needed for Dirigo's config); `configure` adds the provider. */
export async function startUpstream(pki: TestPki, accounts: Record<string, UpstreamAccount>): Promise<UpstreamProvider> {
  const { default: Provider } = (await import(String('oidc-provider'))) as Any;
  let provider: Any = null;
  const state = { tokenRequests: 0 };
  const server: Server = createServer({ cert: readFileSync(pki.server.cert), key: readFileSync(pki.server.key) }, (req, res) => {
    handle(req, res).catch((e: Error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(e));
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!provider) throw new Error('upstream provider not configured yet');
    const path = (req.url ?? '').split('?')[0]!;
    if (path === '/token') state.tokenRequests++;
    const m = /^\/interaction\/([^/]+)(?:\/(login|confirm))?$/.exec(path);
    if (!m) return provider.callback()(req, res);
    const details = await provider.interactionDetails(req, res);
    const uid = details.uid as string;
    if (req.method === 'GET') {
      const body =
        details.prompt.name === 'login'
          ? `<h1>Upstream sign-in</h1><form method="post" action="/interaction/${esc(uid)}/login"><label for="login">Account</label><input id="login" name="login"><button type="submit">Sign in</button></form>`
          : `<h1>Upstream consent</h1><p>Share your identity with ${esc(String(details.params.client_id))}?</p><form method="post" action="/interaction/${esc(uid)}/confirm"><button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny">Deny</button></form>`;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!DOCTYPE html><html><head><title>Upstream</title></head><body>${body}</body></html>`);
      return;
    }
    const form = await readForm(req);
    let result: Any;
    if (m[2] === 'login') {
      const login = form.get('login') ?? '';
      result = accounts[login] ? { login: { accountId: login } } : { error: 'access_denied', error_description: 'no such account' };
    } else if (form.get('decision') !== 'allow') {
      result = { error: 'access_denied', error_description: 'the user declined' };
    } else {
      const grant = details.grantId ? await provider.Grant.find(details.grantId) : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      const d = details.prompt.details ?? {};
      if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
      result = { consent: { grantId: await grant.save() } };
    }
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const key: JWK = { ...(await exportJWK(privateKey)), kid: 'upstream-1', alg: 'RS256', use: 'sig' };

  return {
    issuer,
    get tokenRequests() {
      return state.tokenRequests;
    },
    async configure(clients) {
      provider = new Provider(issuer, {
        clients: clients.map((c) => ({ ...c, token_endpoint_auth_method: 'client_secret_basic', grant_types: ['authorization_code'], response_types: ['code'] })),
        jwks: { keys: [key] },
        cookies: { keys: ['federation-test-cookie-key'] },
        findAccount: (_ctx: Any, id: string) => (accounts[id] ? { accountId: id, claims: () => ({ ...accounts[id] }) } : undefined),
        claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'], groups: ['wlcg.groups', 'eduperson_entitlement'] },
        scopes: ['openid', 'profile', 'email', 'groups'],
        features: { devInteractions: { enabled: false }, userinfo: { enabled: true } },
        routes: { token: '/token' },
      });
      provider.on('server_error', (_ctx: Any, err: Error) => process.stderr.write(`upstream server_error: ${err.stack}\n`));
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface Page {
  url: string;
  status: number;
  text: string;
  location: string | undefined;
  json: any;
}

/** The fields of the form posting to an action matching `action`: hidden inputs and select options. */
export function formFields(html: string, action: RegExp): { action: string; hidden: Record<string, string>; selects: Record<string, string[]> } {
  for (const m of html.matchAll(/<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)) {
    const target = m[1]!.replace(/&amp;/g, '&');
    if (!action.test(target)) continue;
    const hidden: Record<string, string> = {};
    for (const h of m[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) hidden[h[1]!] = h[2]!.replace(/&amp;/g, '&');
    const selects: Record<string, string[]> = {};
    for (const s of m[2]!.matchAll(/<select[^>]*name="([^"]+)"[^>]*>([\s\S]*?)<\/select>/g)) selects[s[1]!] = [...s[2]!.matchAll(/<option value="([^"]*)"/g)].map((o) => o[1]!);
    return { action: target, hidden, selects };
  }
  throw new Error(`no form posting to ${action} in:\n${html.slice(0, 2000)}`);
}

/** A user agent: cookies per origin and path, redirects followed until a page or a URL outside `stopAt`. */
export class FederationBrowser {
  readonly jar = new CookieJar();
  readonly #agent: Agent;
  /** Every URL requested, in order. */
  readonly visited: string[] = [];

  constructor(caPem: string) {
    this.#agent = new Agent({ connect: { ca: caPem } });
  }

  async fetch(url: string, form?: Record<string, string>): Promise<Page> {
    this.visited.push(url);
    const headers: Record<string, string> = {};
    const cookie = await this.jar.getCookieString(url);
    if (cookie) headers.cookie = cookie;
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await request(url, { method: form ? 'POST' : 'GET', headers, body: form ? new URLSearchParams(form).toString() : undefined, dispatcher: this.#agent });
    const set = res.headers['set-cookie'];
    for (const c of Array.isArray(set) ? set : set ? [set] : []) await this.jar.setCookie(c, url, { ignoreError: true });
    const text = await res.body.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const location = typeof res.headers.location === 'string' ? new URL(res.headers.location, url).href : undefined;
    return { url, status: res.statusCode, text, location, json };
  }

  /** Requests `url` and follows redirects (as GETs) while they stay on one of the `origins`. */
  async follow(url: string, origins: string[], form?: Record<string, string>): Promise<Page> {
    let page = await this.fetch(url, form);
    for (let i = 0; i < 20 && page.location && origins.includes(new URL(page.location).origin); i++) page = await this.fetch(page.location);
    return page;
  }

  /** Submits the form of `page` whose action matches `action`, with `fields` added, and follows on. */
  submit(page: Page, action: RegExp, fields: Record<string, string>, origins: string[]): Promise<Page> {
    const f = formFields(page.text, action);
    return this.follow(new URL(f.action, page.url).href, origins, { ...f.hidden, ...fields });
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}
