/**
 * Shared set-up of the federated-login suites: upstream accounts, and a Dirigo config with two providers
 * on the same upstream (one matching users by issuer + subject, one by email).
 */
import type { TestPki } from '../helpers/pki.ts';
import type { UpstreamClient } from '../helpers/oidc-upstream.ts';
import { oauthConfig } from '../helpers/oauth-kit.ts';

export const CLIENT_REDIRECT = 'https://app.example/cb';
export const UPSTREAM_SECRETS = { identity: 'upstream-client-secret-identity-0123', email: 'upstream-client-secret-email-0123' };

/** Upstream accounts: the key is the account id and `sub`. */
export const ACCOUNTS = {
  'alice-up': { sub: 'alice-up', email: 'alice@test.example', email_verified: true, name: 'Alice', 'wlcg.groups': ['/dirigo/production', '/unrelated'] },
  'bob-up': { sub: 'bob-up', email: 'bob@test.example', email_verified: true, 'wlcg.groups': ['/dirigo', '/dirigo/production'] },
  'carol-up': { sub: 'carol-up', 'wlcg.groups': ['/elsewhere'] },
  stranger: { sub: 'stranger', email: 'nobody@test.example', email_verified: true, 'wlcg.groups': ['/dirigo'] },
  unverified: { sub: 'unverified', email: 'carol@test.example', email_verified: false, 'wlcg.groups': ['/dirigo'] },
};

export async function federationConfig(pki: TestPki, upstream: string): Promise<Record<string, unknown>> {
  const base = await oauthConfig();
  const registry = base.registry as { users: { name: string }[] };
  const links: Record<string, string> = { bob: 'bob-up', carol: 'carol-up' };
  return {
    ...base,
    registry: { ...registry, users: registry.users.map((u) => (links[u.name] ? { ...u, identities: [{ issuer: upstream, subject: links[u.name] }] } : u)) },
    identityProviders: [
      {
        name: 'upstream',
        displayName: 'Upstream IdP',
        issuer: upstream,
        clientId: 'dirigo',
        clientSecret: UPSTREAM_SECRETS.identity,
        scopes: ['openid', 'profile', 'email', 'groups'],
        groupMapping: { '/dirigo': 'dirigo_user', '/dirigo/production': 'dirigo_prod' },
        matchBy: 'identity',
        verify: pki.caFile,
      },
      {
        name: 'upstream-mail',
        displayName: 'Upstream by email',
        metadataUrl: `${upstream}/.well-known/openid-configuration`,
        clientId: 'dirigo-mail',
        clientSecret: UPSTREAM_SECRETS.email,
        scopes: ['openid', 'email', 'groups'],
        groupMapping: { '/dirigo': 'dirigo_user', '/dirigo/production': ['dirigo_prod'] },
        matchBy: 'email',
        verify: pki.caFile,
      },
    ],
  };
}

/** The upstream registrations of Dirigo's two client ids, with Dirigo's callback URLs. */
export function upstreamClients(dirigoUrl: string): UpstreamClient[] {
  return [
    { client_id: 'dirigo', client_secret: UPSTREAM_SECRETS.identity, redirect_uris: [`${dirigoUrl}/oauth2/federation/upstream/callback`] },
    { client_id: 'dirigo-mail', client_secret: UPSTREAM_SECRETS.email, redirect_uris: [`${dirigoUrl}/oauth2/federation/upstream-mail/callback`] },
  ];
}
