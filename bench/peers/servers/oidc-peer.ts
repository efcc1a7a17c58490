/**
 * The peer of Dirigo's token endpoint and introspection: `oidc-provider` (npm) over HTTPS with the given
 * certificate, one confidential client (client_secret_basic) allowed the client_credentials grant, and
 * introspection on. Its own process, so that its CPU can be read from /proc. Its access tokens are the
 * provider's default (opaque, kept in its in-memory adapter), or with `jwt` JWTs signed with ES256 as
 * Dirigo's are: every token is for one resource server (its resource indicators, RFC 8707) whose format
 * is `jwt`. Prints `listening <url>` once it listens.
 *
 *   node bench/peers/servers/oidc-peer.ts <cert.pem> <key.pem> <client_id> <client_secret> [opaque|jwt]
 */
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { exportJWK, generateKeyPair } from 'jose';

/* oidc-provider ships no type declarations. */
/* eslint-disable @typescript-eslint/no-explicit-any */
type Any = any;

const [cert, key, clientId, clientSecret, format = 'opaque'] = process.argv.slice(2);
if (!cert || !key || !clientId || !clientSecret || !['opaque', 'jwt'].includes(format)) throw new Error('usage: oidc-peer.ts <cert> <key> <client_id> <client_secret> [opaque|jwt]');
const { default: Provider } = (await import(String('oidc-provider'))) as Any;
const server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => handler(req, res));
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
const { privateKey } = await generateKeyPair('ES256', { extractable: true });
const RESOURCE = 'https://compute.bench.example';
// Every client_credentials token is for the one resource server, whose tokens are ES256 JWTs.
const resourceIndicators = {
  enabled: true,
  defaultResource: () => RESOURCE,
  useGrantedResource: () => true,
  getResourceServerInfo: () => ({ scope: 'compute.read', audience: RESOURCE, accessTokenTTL: 3600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } }),
};
const provider = new Provider(issuer, {
  clients: [{ client_id: clientId, client_secret: clientSecret, token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'], response_types: [], redirect_uris: [], id_token_signed_response_alg: 'ES256' }],
  jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'peer-1', alg: 'ES256', use: 'sig' }] },
  cookies: { keys: ['peer-bench-cookie-key'] },
  scopes: ['openid', 'compute.read'],
  features: { devInteractions: { enabled: false }, clientCredentials: { enabled: true }, introspection: { enabled: true }, ...(format === 'jwt' ? { resourceIndicators } : {}) },
  routes: { token: '/token', introspection: '/introspect' },
});
provider.on('server_error', (_ctx: Any, err: Error) => process.stderr.write(`oidc-peer server_error: ${err.stack}\n`));
const handler = provider.callback();
process.stdout.write(`listening ${issuer}\n`);
process.once('SIGTERM', () => process.exit(0));
