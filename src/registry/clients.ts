/**
 * OAuth clients: those of config.yaml plus those added with `dirigo admin client add` (database). Lookups
 * are cached for a few seconds so that a client added or removed on one instance reaches the others.
 * Secrets are scrypt hashes; the secret that last passed is remembered in memory so that busy clients (for
 * example a resource server introspecting tokens) do not pay scrypt on every request.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import type { ClientConfig } from './config-schema.ts';
import { Conflict, InvalidRequest, NotFound } from '../kernel/errors.ts';
import { generateSecret, hashSecret, verifySecret } from './passwords.ts';

export const GRANT_AUTHORIZATION_CODE = 'authorization_code';
export const GRANT_REFRESH_TOKEN = 'refresh_token';
export const GRANT_DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';
export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** A confidential client's own token (RFC 6749 §4.4); flow A needs no client registration. */
export const GRANT_CLIENT_CREDENTIALS = 'client_credentials';
export const CLIENT_GRANTS = [GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN, GRANT_DEVICE_CODE, GRANT_TOKEN_EXCHANGE, GRANT_CLIENT_CREDENTIALS] as const;

export interface OAuthClient {
  clientId: string;
  name: string;
  type: 'public' | 'confidential';
  secretHash: string | undefined;
  redirectUris: readonly string[];
  grants: readonly string[];
  /** Refresh tokens `always`, or only when `offline_access` is asked for (config clients; database ones: always). */
  refreshTokens: 'always' | 'offline_access';
  /** RP-initiated logout: where the browser may be sent afterwards, and whether the grants go too. */
  postLogoutRedirectUris: readonly string[];
  revokeOnLogout: boolean;
  /** Scopes of the client's own client_credentials tokens. */
  scopes: readonly string[];
  /** Public keys for private_key_jwt (config clients). */
  jwks: { keys: Record<string, unknown>[] } | undefined;
  /** The shared key for client_secret_jwt (config clients). */
  jwtSecret?: string | undefined;
  source: 'config' | 'database' | 'built-in';
  /**
   * A client the service itself provides (its web application): a signed-in user who names the group of
   * the token is not asked to consent again, as with any first-party application.
   */
  firstParty?: boolean;
  /** Dynamically registered clients (RFC 7591): what was registered, and the registration access token's hash. */
  registration?: { metadata: RegisteredMetadata; tokenHash: string } | undefined;
}

/** Client metadata (RFC 7591 §2) kept for a dynamically registered client, returned as registered. */
export interface RegisteredMetadata {
  client_name?: string;
  scope?: string;
  token_endpoint_auth_method: string;
  grant_types: string[];
  response_types: string[];
  redirect_uris: string[];
  post_logout_redirect_uris?: string[];
  application_type?: string;
  contacts?: string[];
  client_uri?: string;
}

function registeredMetadata(json: string | null): Partial<RegisteredMetadata> {
  return json === null ? {} : (JSON.parse(json) as RegisteredMetadata);
}

/** Whether a grant of `client` with `scope` gets a refresh token (the refresh_token grant and its policy). */
export function issuesRefreshToken(client: OAuthClient, scope: readonly string[]): boolean {
  if (!client.grants.includes(GRANT_REFRESH_TOKEN)) return false;
  return client.refreshTokens === 'always' || scope.includes('offline_access');
}

const CACHE_MS = 2_000;
const CLIENT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * Checks a redirect URI for registration (RFC 6749 §3.1.2, RFC 9700 §4.1, RFC 8252 §7):
 * absolute, no fragment, no credentials; https, or http on a loopback address (native apps), or a
 * private-use scheme in reverse-domain form. `javascript:`, `data:` and the like are refused.
 * @returns a description of the problem, or undefined when the URI is acceptable.
 */
export function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `'${uri}' is not an absolute URI`;
  }
  if (uri.includes('#')) return `'${uri}' has a fragment (RFC 6749 §3.1.2)`;
  if (url.username || url.password) return `'${uri}' carries credentials`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') {
    return isLoopbackHost(url.hostname) ? undefined : `'${uri}' uses http on a host that is not a loopback address (RFC 8252 §7.3)`;
  }
  // RFC 8252 §7.1: private-use schemes are reverse domain names, so they contain a dot.
  if (/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol)) return undefined;
  return `'${uri}' uses the scheme ${url.protocol} which is not allowed for redirects`;
}

function isLoopbackHost(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === '[::1]' || hostname === 'localhost';
}

/** `http://127.0.0.1:1234/cb` → `http://127.0.0.1/cb`; undefined when not an IP-literal loopback URI. */
function withoutLoopbackPort(uri: string): string | undefined {
  const m = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?].*)?$/.exec(uri);
  if (!m) return undefined;
  if (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 65535)) return undefined;
  return `http://${m[1]}${m[3] ?? ''}`;
}

/**
 * Whether `requested` is one of the client's registered redirect URIs: exact string comparison
 * (RFC 9700 §4.1.3), except that for public clients an IP-literal loopback URI matches on any port
 * (RFC 8252 §7.3). Never prefix, suffix or normalised matching.
 */
export function matchesRedirectUri(client: OAuthClient, requested: string): boolean {
  if (client.redirectUris.includes(requested)) return true;
  if (client.type !== 'public') return false;
  const stripped = withoutLoopbackPort(requested);
  if (stripped === undefined || requested.includes('#')) return false;
  return client.redirectUris.some((r) => withoutLoopbackPort(r) === stripped);
}

export interface NewClient {
  clientId: string;
  name: string;
  type: 'public' | 'confidential';
  redirectUris: string[];
  grants: string[];
  /** Scopes of its own client_credentials tokens, already checked as scopes (auth's parseScope). */
  scopes?: string[];
}

/** Checks a client description; throws InvalidRequest naming the first problem. */
export function validateClient(c: NewClient): void {
  if (!CLIENT_ID.test(c.clientId)) throw new InvalidRequest(`client id '${c.clientId}' must be 1-128 of A-Z a-z 0-9 _ . : -`);
  if (!c.name.trim()) throw new InvalidRequest('the client needs a name');
  // oauth_clients.name is varchar(256), as registration's client_name (its schema's maxLength).
  if ([...c.name].length > 256) throw new InvalidRequest('the client name may have at most 256 characters');
  if (c.type !== 'public' && c.type !== 'confidential') throw new InvalidRequest(`client type must be public or confidential, not '${c.type as string}'`);
  for (const g of c.grants) {
    if (!(CLIENT_GRANTS as readonly string[]).includes(g)) throw new InvalidRequest(`unknown grant '${g}'; one of ${CLIENT_GRANTS.join(', ')}`);
  }
  for (const uri of c.redirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new InvalidRequest(`redirect URI ${problem}`);
  }
  // RFC 6749 §4.4: only a client that can authenticate may get a token for itself.
  if (c.grants.includes(GRANT_CLIENT_CREDENTIALS) && c.type !== 'confidential') throw new InvalidRequest('the client_credentials grant is for confidential clients only (RFC 6749 §4.4)');
  if ((c.scopes?.length ?? 0) > 0 && !c.grants.includes(GRANT_CLIENT_CREDENTIALS)) throw new InvalidRequest('scopes are those of the client\'s own tokens: they need the client_credentials grant');
  if (c.grants.includes(GRANT_AUTHORIZATION_CODE) && c.redirectUris.length === 0) {
    throw new InvalidRequest('a client using authorization_code needs at least one redirect URI');
  }
}

function fromConfig(c: ClientConfig): OAuthClient {
  return { clientId: c.clientId, name: c.name, type: c.type, secretHash: c.secretHash, redirectUris: c.redirectUris, grants: c.grants, refreshTokens: c.refreshTokens, postLogoutRedirectUris: c.postLogoutRedirectUris, revokeOnLogout: c.revokeOnLogout, scopes: c.scopes, jwks: c.jwks, jwtSecret: c.jwtSecret, source: 'config' };
}

export class ClientRegistry {
  readonly #db: Db;
  readonly #configured = new Map<string, OAuthClient>();
  readonly #builtIn = new Map<string, () => OAuthClient>();
  readonly #cache = new Map<string, { client: OAuthClient | undefined; at: number }>();
  /** The secret that last passed scrypt, per client (memory only). */
  readonly #verified = new Map<string, { hash: string; secret: Buffer }>();

  constructor(db: Db, configured: readonly ClientConfig[]) {
    this.#db = db;
    for (const c of configured) this.#configured.set(c.clientId, fromConfig(c));
  }

  /** The client, or undefined when no such client is registered. */
  async get(clientId: string): Promise<OAuthClient | undefined> {
    const configured = this.#configured.get(clientId);
    if (configured) return configured;
    const builtIn = this.#builtIn.get(clientId);
    if (builtIn) return builtIn();
    const hit = this.#cache.get(clientId);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.client;
    const row = await this.#db.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    const client: OAuthClient | undefined = row
      ? {
          clientId: row.client_id,
          name: row.name,
          type: row.type === 'confidential' ? 'confidential' : 'public',
          secretHash: row.secret_hash ?? undefined,
          redirectUris: JSON.parse(row.redirect_uris) as string[],
          grants: JSON.parse(row.grants) as string[],
          refreshTokens: 'always',
          postLogoutRedirectUris: registeredMetadata(row.metadata).post_logout_redirect_uris ?? [],
          revokeOnLogout: false,
          scopes: row.scopes === null ? [] : (JSON.parse(row.scopes) as string[]),
          jwks: undefined,
          source: 'database',
          registration: row.metadata === null ? undefined : { metadata: registeredMetadata(row.metadata) as RegisteredMetadata, tokenHash: row.registration_token_hash ?? '' },
        }
      : undefined;
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(clientId, { client, at: Date.now() });
    return client;
  }

  /**
   * Adds a client that the service provides itself. It is described on each lookup, so that its redirect
   * URIs follow the public URL, which is known only once the server listens. A client of the same id in
   * config.yaml takes precedence, so a site can replace it.
   */
  addBuiltIn(clientId: string, describe: () => Omit<OAuthClient, 'clientId' | 'source'>): void {
    this.#builtIn.set(clientId, () => ({ ...describe(), clientId, source: 'built-in' }));
  }

  /**
   * Constant-time secret check: scrypt once per client and secret, then a constant-time comparison with
   * the secret that last passed (kept in memory only, like every secret the process receives).
   */
  async verifySecret(client: OAuthClient, secret: string): Promise<boolean> {
    if (!client.secretHash) return false;
    const presented = Buffer.from(secret);
    const known = this.#verified.get(client.clientId);
    if (known && known.hash === client.secretHash && known.secret.length === presented.length && timingSafeEqual(known.secret, presented)) return true;
    const ok = await verifySecret(secret, client.secretHash);
    if (ok) this.#verified.set(client.clientId, { hash: client.secretHash, secret: presented });
    return ok;
  }

  async list(): Promise<OAuthClient[]> {
    const rows = await this.#db.selectFrom('oauth_clients').select('client_id').orderBy('client_id').execute();
    const out = [...this.#configured.values()];
    for (const [id, describe] of this.#builtIn) if (!this.#configured.has(id)) out.push(describe());
    for (const r of rows) {
      if (this.#configured.has(r.client_id) || this.#builtIn.has(r.client_id)) continue;
      const c = await this.get(r.client_id);
      if (c) out.push(c);
    }
    return out;
  }

  /**
   * Registers a client in the database. Confidential clients get a generated secret, returned once.
   * @throws Conflict when the id is taken, InvalidRequest for a bad description.
   */
  async add(c: NewClient, registration?: { metadata: RegisteredMetadata; tokenHash: string }): Promise<{ client: OAuthClient; secret: string | undefined }> {
    validateClient(c);
    if (this.#configured.has(c.clientId)) throw new Conflict(`client ${c.clientId} is defined in the configuration`);
    if (this.#builtIn.has(c.clientId)) throw new Conflict(`client ${c.clientId} is provided by the service itself`);
    const secret = c.type === 'confidential' ? generateSecret(32) : undefined;
    const secretHash = secret ? await hashSecret(secret) : null;
    const exists = await this.#db.selectFrom('oauth_clients').select('client_id').where('client_id', '=', c.clientId).executeTakeFirst();
    if (exists) throw new Conflict(`client ${c.clientId} already exists`);
    await this.#db
      .insertInto('oauth_clients')
      .values({
        client_id: c.clientId,
        name: c.name,
        type: c.type,
        secret_hash: secretHash,
        redirect_uris: JSON.stringify(c.redirectUris),
        grants: JSON.stringify(c.grants),
        created_at: nowIso(),
        registration_token_hash: registration?.tokenHash ?? null,
        metadata: registration ? JSON.stringify(registration.metadata) : null,
        scopes: c.scopes?.length ? JSON.stringify(c.scopes) : null,
      })
      .execute();
    this.#cache.delete(c.clientId);
    const client = await this.get(c.clientId);
    if (!client) throw new Error(`client ${c.clientId} vanished after its registration`);
    return { client, secret };
  }

  /** Replaces a dynamically registered client's description (RFC 7592 §2.2); its secret and token stay. */
  async update(c: NewClient, metadata: RegisteredMetadata): Promise<OAuthClient> {
    validateClient(c);
    await this.#db
      .updateTable('oauth_clients')
      .set({ name: c.name, redirect_uris: JSON.stringify(c.redirectUris), grants: JSON.stringify(c.grants), metadata: JSON.stringify(metadata) })
      .where('client_id', '=', c.clientId)
      .execute();
    this.#cache.delete(c.clientId);
    const client = await this.get(c.clientId);
    if (!client) throw new NotFound(`no client ${c.clientId}`);
    return client;
  }

  /** @throws NotFound for an unknown client, Conflict for one defined in the configuration. */
  async remove(clientId: string): Promise<void> {
    if (this.#configured.has(clientId)) throw new Conflict(`client ${clientId} is defined in the configuration; edit config.yaml to remove it`);
    const res = await this.#db.deleteFrom('oauth_clients').where('client_id', '=', clientId).executeTakeFirst();
    if (Number(res.numDeletedRows) === 0) throw new NotFound(`no client ${clientId}`);
    this.#cache.delete(clientId);
    this.#verified.delete(clientId);
  }
}
