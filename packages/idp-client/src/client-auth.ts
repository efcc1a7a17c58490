/** Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3, RFC 7523 §2.2, RFC 8705 §2). */
import { randomBytes, createPrivateKey, type KeyObject } from 'node:crypto';
import { SignJWT, importJWK, type JWK } from 'jose';
import type { AuthBase, PreparedRequest } from './models.ts';
import { OAuthError } from './errors.ts';

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none' | 'client_secret_jwt' | 'private_key_jwt' | 'tls_client_auth' | (string & {});

/** What a custom client-authentication method (register_client_auth_method) provides. */
export interface ClientAuthSigner {
  /** The token_endpoint_auth_method name it implements. */
  name: string;
  /** Adds credentials to the request: headers, body, or URL. */
  sign(auth: ClientAuth, request: PreparedRequest): PreparedRequest | Promise<PreparedRequest>;
}

/** Form-encoding of RFC 6749 Appendix B, which §2.3.1 requires before base 64. */
function formEncode(s: string): string {
  return encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function bodyParams(r: PreparedRequest): URLSearchParams {
  const b = r.body;
  if (b === null) return new URLSearchParams();
  if (typeof b === 'string') return new URLSearchParams(b);
  if (Buffer.isBuffer(b)) return new URLSearchParams(b.toString('utf8'));
  throw new OAuthError('invalid_request', 'client authentication in the body needs a form-encoded body');
}

function setBody(r: PreparedRequest, params: URLSearchParams): void {
  r.body = params.toString();
  // A form Content-Type already there (with its charset) stays as it is.
  if (!(r.headers.get('Content-Type') ?? '').startsWith('application/x-www-form-urlencoded')) r.headers.set('Content-Type', 'application/x-www-form-urlencoded');
  r.headers.set('Content-Length', String(Buffer.byteLength(r.body)));
  r._body_position = 0;
}

type SigningKey = Parameters<SignJWT['sign']>[0];

/** Options for the JWT-based methods. */
export interface ClientAssertionOptions {
  /** Key for private_key_jwt: a PEM string, a JWK or a KeyObject. */
  client_assertion_key?: string | JWK | KeyObject;
  /** Signing algorithm (RS256 for private_key_jwt, HS256 for client_secret_jwt by default). */
  client_assertion_alg?: string;
  /** `kid` header of the assertion. */
  client_assertion_kid?: string;
  /** Seconds the assertion is valid. */
  client_assertion_lifetime?: number;
}

/**
 * Client authentication for one method; apply() signs a prepared request to an OAuth endpoint.
 *
 * @example
 * const auth = new ClientAuth('my-client', 's3cret', 'client_secret_basic');
 * await session.post(tokenUrl, { data: { grant_type: 'client_credentials' }, auth, withhold_token: true });
 */
export class ClientAuth implements AuthBase {
  client_id: string;
  client_secret: string | null;
  auth_method: ClientAuthMethod;
  assertion: ClientAssertionOptions;
  signers: Map<string, ClientAuthSigner>;

  constructor(client_id: string, client_secret: string | null, auth_method: ClientAuthMethod = 'client_secret_basic', assertion: ClientAssertionOptions = {}, signers: Map<string, ClientAuthSigner> = new Map()) {
    this.client_id = client_id;
    this.client_secret = client_secret;
    this.auth_method = auth_method;
    this.assertion = assertion;
    this.signers = signers;
  }

  async apply(r: PreparedRequest): Promise<PreparedRequest> {
    const custom = this.signers.get(this.auth_method);
    if (custom) return custom.sign(this, r);
    switch (this.auth_method) {
      case 'client_secret_basic': {
        // RFC 6749 §2.3.1: id and secret are form-encoded, then joined and base-64 encoded.
        const creds = `${formEncode(this.client_id)}:${formEncode(this.client_secret ?? '')}`;
        r.headers.set('Authorization', `Basic ${Buffer.from(creds, 'utf8').toString('base64')}`);
        return r;
      }
      case 'client_secret_post': {
        const p = bodyParams(r);
        p.set('client_id', this.client_id);
        p.set('client_secret', this.client_secret ?? '');
        setBody(r, p);
        return r;
      }
      case 'none':
      case 'tls_client_auth':
      case 'self_signed_tls_client_auth': {
        // RFC 8705 §2: the TLS client certificate (the session's `cert`) authenticates; client_id names it.
        const p = bodyParams(r);
        p.set('client_id', this.client_id);
        setBody(r, p);
        return r;
      }
      case 'client_secret_jwt':
      case 'private_key_jwt': {
        const p = bodyParams(r);
        p.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
        p.set('client_assertion', await this.clientAssertion(r.url.split('?')[0] as string));
        p.set('client_id', this.client_id);
        setBody(r, p);
        return r;
      }
      default:
        throw new OAuthError('invalid_client', `unsupported client authentication method ${JSON.stringify(this.auth_method)}`);
    }
  }

  /** RFC 7523 §3: iss = sub = client_id, aud = the endpoint, short lifetime, unique jti. */
  async clientAssertion(audience: string): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const lifetime = this.assertion.client_assertion_lifetime ?? 60;
    let key: SigningKey;
    let alg: string;
    if (this.auth_method === 'client_secret_jwt') {
      if (!this.client_secret) throw new OAuthError('invalid_client', 'client_secret_jwt needs a client_secret');
      alg = this.assertion.client_assertion_alg ?? 'HS256';
      key = new TextEncoder().encode(this.client_secret);
    } else {
      const k = this.assertion.client_assertion_key;
      if (!k) throw new OAuthError('invalid_client', 'private_key_jwt needs client_assertion_key');
      alg = this.assertion.client_assertion_alg ?? (typeof k === 'object' && 'alg' in k && typeof k.alg === 'string' ? k.alg : 'RS256');
      if (typeof k === 'string') key = createPrivateKey(k);
      else if ('asymmetricKeyType' in k || 'symmetricKeySize' in k || (k as KeyObject).type === 'private') key = k as KeyObject;
      else key = await importJWK(k as JWK, alg);
    }
    const header: { alg: string; typ: string; kid?: string } = { alg, typ: 'JWT' };
    const kid = this.assertion.client_assertion_kid ?? (typeof this.assertion.client_assertion_key === 'object' && 'kid' in this.assertion.client_assertion_key ? (this.assertion.client_assertion_key as JWK).kid : undefined);
    if (kid) header.kid = kid;
    return new SignJWT({})
      .setProtectedHeader(header)
      .setIssuer(this.client_id)
      .setSubject(this.client_id)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(now + lifetime)
      .setJti(randomBytes(16).toString('hex'))
      .sign(key);
  }
}
