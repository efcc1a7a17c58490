/**
 * A real OpenID provider (oidc-provider from npm) over HTTPS with the test CA, configured for client
 * credentials, code + PKCE, refresh, device flow, revocation, introspection, mTLS client auth and a
 * token-exchange custom grant. Logins and consents are approved automatically for user "alice".
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { generateKeyPair, exportJWK, type JWK } from 'jose';
import { startHttps, type Running } from './servers.ts';
import { OAuth2Session, type Response } from '../../src/index.ts';

/* oidc-provider ships no type declarations; the tests use it through this loose shape. */
/* eslint-disable @typescript-eslint/no-explicit-any */
type Any = any;

export const API_RESOURCE = 'https://api.dirigo.test';
export const REDIRECT_URI = 'https://client.dirigo.test/callback';
export const SECRETS = {
  confidential: 'secret with spaces:colons&amp=+/%', // exercises RFC 6749 §2.3.1 form-encoding
  post: 'post-client-secret',
  jwt: 'a-client-secret-that-is-long-enough-for-hs256-0123456789',
};

export const ALICE = {
  sub: 'alice',
  name: 'Alice Example',
  preferred_username: 'alice',
  email: 'alice@example.org',
  'wlcg.groups': ['/dirigo', '/dirigo/production'],
  eduperson_entitlement: ['urn:mace:egi.eu:group:dirigo.example.org:analysis:role=member#aai.egi.eu'],
  groups: ['dirigo-admins'],
};

export interface OidcTestProvider {
  issuer: string;
  server: Running;
  provider: Any;
  /** Private JWKs (for a test that wants to mint tokens with the provider's own key). */
  signingKeys: JWK[];
  /** Public key of the private_key_jwt client, and its private JWK. */
  clientKey: JWK;
  /** Replaces the provider with one signing with a new key (the old one still published). */
  rotate(): Promise<JWK>;
  /** Requests served per path. */
  hits: Map<string, number>;
  close(): Promise<void>;
}

async function rsaJwk(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

export async function startOidcProvider(): Promise<OidcTestProvider> {
  const { default: Provider, errors } = (await import(String('oidc-provider'))) as Any;
  let current: Any = null;
  const hits = new Map<string, number>();
  const server = await startHttps(async (req, res) => {
    const path = (req.url ?? '').split('?')[0] as string;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path.startsWith('/interaction/')) return interaction(current, req, res);
    return current.callback()(req, res);
  }, { requestCert: true });
  const issuer = server.url;
  const signingKeys = [await rsaJwk('key-1')];
  const clientPrivate = await rsaJwk('client-key-1');
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...clientPublic } = clientPrivate;

  const build = (): Any => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: 'confidential', client_secret: SECRETS.confidential, token_endpoint_auth_method: 'client_secret_basic',
          grant_types: ['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code', 'urn:ietf:params:oauth:grant-type:token-exchange'],
          response_types: ['code'], redirect_uris: [REDIRECT_URI],
          scope: 'openid profile email groups offline_access api:read',
        },
        {
          client_id: 'post-client', client_secret: SECRETS.post, token_endpoint_auth_method: 'client_secret_post',
          grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'api:read',
        },
        {
          client_id: 'jwt-client', client_secret: SECRETS.jwt, token_endpoint_auth_method: 'client_secret_jwt',
          token_endpoint_auth_signing_alg: 'HS256', grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'api:read',
        },
        {
          client_id: 'pkjwt-client', token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'RS256',
          jwks: { keys: [clientPublic] }, grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'api:read',
        },
        {
          client_id: 'mtls-client', token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: 'CN=mtls-client',
          grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'api:read',
        },
        {
          client_id: 'public-device', token_endpoint_auth_method: 'none',
          grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'], response_types: [], redirect_uris: [],
          scope: 'openid profile email groups offline_access',
        },
      ],
      jwks: { keys: signingKeys },
      cookies: { keys: ['idp-client-test-cookie-key'] },
      findAccount: (_ctx: Any, id: string) => ({ accountId: id, claims: () => ({ ...ALICE, sub: id }) }),
      claims: {
        openid: ['sub'], profile: ['name', 'preferred_username'], email: ['email'],
        groups: ['wlcg.groups', 'eduperson_entitlement', 'groups'],
      },
      scopes: ['openid', 'offline_access', 'profile', 'email', 'groups', 'api:read'],
      pkce: { required: () => false },
      clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt', 'tls_client_auth', 'none'],
      issueRefreshToken: () => true,
      extraTokenClaims: () => ({ 'wlcg.groups': ['/dirigo'] }),
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        deviceFlow: {
          enabled: true,
          userCodeInputSource: async (ctx: Any, form: string) => { ctx.body = `<html><body>${form}</body></html>`; },
          userCodeConfirmSource: async (ctx: Any, form: string) => { ctx.body = `<html><body>${form}</body></html>`; },
          successSource: async (ctx: Any) => { ctx.body = '<html><body>device authorized</body></html>'; },
        },
        revocation: { enabled: true },
        introspection: { enabled: true },
        userinfo: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => undefined,
          getResourceServerInfo: () => ({ scope: 'api:read', audience: API_RESOURCE, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
          useGrantedResource: () => true,
        },
        mTLS: {
          enabled: true,
          tlsClientAuth: true,
          getCertificate: (ctx: Any) => (ctx.req.socket as TLSSocket).getPeerX509Certificate?.(),
          certificateAuthorized: (ctx: Any) => (ctx.req.socket as TLSSocket).authorized,
          certificateSubjectMatches: (ctx: Any, property: string, expected: string) => {
            const cert = (ctx.req.socket as TLSSocket).getPeerX509Certificate?.();
            return property === 'tls_client_auth_subject_dn' && !!cert && cert.subject.split('\n').includes(expected);
          },
        },
      },
      ttl: { AccessToken: 3600, ClientCredentials: 600, DeviceCode: 600, RefreshToken: 86400 },
    });
    provider.registerGrantType('urn:ietf:params:oauth:grant-type:token-exchange', async (ctx: Any) => {
      const { subject_token, subject_token_type, scope } = ctx.oidc.params;
      if (subject_token_type !== 'urn:ietf:params:oauth:token-type:access_token') throw new errors.InvalidRequest('unsupported subject_token_type');
      const subject = await ctx.oidc.provider.AccessToken.find(subject_token);
      if (!subject) throw new errors.InvalidGrant('subject_token is invalid or expired');
      const wanted = (scope ?? subject.scope ?? '').split(' ').filter(Boolean);
      const allowed = new Set((subject.scope ?? '').split(' '));
      const granted = wanted.filter((s: string) => allowed.has(s));
      if (wanted.length && granted.length === 0) throw new errors.InvalidScope('requested scope exceeds the subject token', scope);
      const at = new ctx.oidc.provider.AccessToken({
        accountId: subject.accountId, client: ctx.oidc.client, grantId: subject.grantId, scope: granted.join(' '), gty: 'token_exchange',
      });
      const value = await at.save();
      ctx.body = { access_token: value, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: at.expiration, scope: at.scope };
    }, new Set(['subject_token', 'subject_token_type', 'scope', 'requested_token_type', 'audience']));
    provider.on('server_error', (_ctx: Any, err: Error) => { process.stderr.write(`oidc-provider server_error: ${err.stack}\n`); });
    return provider;
  };
  current = build();
  return {
    issuer, server, get provider() { return current; }, signingKeys, clientKey: clientPrivate, hits,
    rotate: async () => {
      const fresh = await rsaJwk(`key-${signingKeys.length + 1}`);
      signingKeys.unshift(fresh); // the first key signs
      current = build();
      return fresh;
    },
    close: () => server.close(),
  } as OidcTestProvider;
}

/** Auto-approves the login and consent prompts for "alice". */
async function interaction(provider: Any, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  let result: Any;
  if (details.prompt.name === 'login') {
    result = { login: { accountId: 'alice' } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    const d = details.prompt.details ?? {};
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    if (d.missingResourceScopes) for (const [indicator, scopes] of Object.entries(d.missingResourceScopes)) grant.addResourceScope(indicator, (scopes as string[]).join(' '));
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

/**
 * Plays the browser: follows the authorization URL through the provider's redirects (keeping its
 * cookies) until it points at the client's redirect_uri, and returns that callback URL.
 */
export async function browserAuthorize(authorizationUrl: string, caFile: string, redirectUri = REDIRECT_URI): Promise<string> {
  const browser = new OAuth2Session({ verify: caFile });
  try {
    let url = authorizationUrl;
    for (let i = 0; i < 20; i++) {
      const r: Response = await browser.get(url, { allow_redirects: false, withhold_token: true });
      const location = r.headers.get('location');
      if (!location) throw new Error(`authorization stopped at HTTP ${r.status_code}: ${r.text.slice(0, 300)}`);
      const next = new URL(location, url).href;
      if (next.startsWith(redirectUri)) return next;
      url = next;
    }
    throw new Error('too many steps in the authorization');
  } finally {
    await browser.close();
  }
}

function formInputs(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input[^>]*>/g)) {
    const name = /name="([^"]*)"/.exec(m[0])?.[1];
    const value = /value="([^"]*)"/.exec(m[0])?.[1];
    if (name && value !== undefined) out[name] = value.replace(/&#(\d+);/g, (_x, n) => String.fromCharCode(Number(n))).replace(/&amp;/g, '&');
  }
  return out;
}

/** Plays the user of the device flow: opens verification_uri_complete, confirms, logs in and consents. */
export async function browserApproveDevice(verificationUriComplete: string, caFile: string): Promise<void> {
  const browser = new OAuth2Session({ verify: caFile });
  try {
    const page = await browser.get(verificationUriComplete, { withhold_token: true });
    const action = /action="([^"]+)"/.exec(page.text)?.[1] as string;
    const first = await browser.post(new URL(action, page.url).href, { data: formInputs(page.text), withhold_token: true });
    const confirm = formInputs(first.text);
    let r = await browser.post(new URL(action, page.url).href, { data: { ...confirm, confirm: 'yes' }, withhold_token: true, allow_redirects: true });
    if (!/device authorized/.test(r.text)) {
      r = await browser.get(r.url, { withhold_token: true });
      if (!/device authorized/.test(r.text)) throw new Error(`device approval failed: HTTP ${r.status_code} ${r.text.slice(0, 300)}`);
    }
  } finally {
    await browser.close();
  }
}
