/**
 * Wire shapes of the account endpoints (account.ts): who the caller is, their grants and their browser
 * sessions, for an application's "Account" page. Times are ISO 8601 instants in UTC.
 */
import { Type } from 'typebox';

const instant = (description: string) => Type.String({ format: 'date-time', description });

export const Account = Type.Object({
  username: Type.String({ description: 'The user name (the tokens\' sub and preferred_username)' }),
  dns: Type.Array(Type.String(), { description: 'The certificate subject DNs registered for the user' }),
  email: Type.Optional(Type.String({ description: 'The e-mail address, when one is registered' })),
  identities: Type.Array(
    Type.Object({ issuer: Type.String({ description: 'The upstream OpenID provider' }), subject: Type.String({ description: 'The account there (sub)' }) }),
    { description: 'Upstream accounts that sign in as this user (federated sign-in)' },
  ),
  group: Type.String({ description: 'The group of the calling token' }),
  setup: Type.String({ description: 'The setup of the calling token' }),
  client_id: Type.String({ description: 'The client the calling token was issued to' }),
  scope: Type.String({ description: 'The calling token\'s scopes, space-separated; without compute.* or storage.* scopes it has the group\'s full rights' }),
  groups: Type.Array(
    Type.Object({ name: Type.String(), properties: Type.Array(Type.String(), { description: 'The group\'s properties (JobAdministrator, JobSharing, Pilot, ...)' }) }),
    { description: 'Every group the user is a member of' },
  ),
  setups: Type.Array(Type.String(), { description: 'The setups tokens may be asked for' }),
  aup: Type.Optional(
    Type.Object({
      version: Type.String({ description: 'The current version (GET /registry/aup has its text)' }),
      accepted: Type.Boolean({ description: 'Whether the user accepted it (and the acceptance is still valid); false: no new tokens until POST /registry/aup/accept' }),
    }, { description: 'The acceptable-use policy, when the service has one' }),
  ),
});

export const AccountGrant = Type.Object({
  grant_id: Type.String({ description: 'The grant; DELETE /oauth2/account/grants/{grantId} revokes it' }),
  client_id: Type.String(),
  client_name: Type.String({ description: 'The client\'s registered name (its id when it no longer exists)' }),
  group: Type.String(),
  setup: Type.String(),
  scope: Type.String({ description: 'The scopes granted, space-separated' }),
  issued_at: instant('When the user allowed it (the code or device code was redeemed)'),
  refreshed_at: Type.Union([instant('When the client last refreshed it'), Type.Null()], { description: 'When the client last refreshed it; null when never' }),
  expires_at: instant('When its last token expires: its refresh token, or the access token of a grant without one'),
  refreshable: Type.Boolean({ description: 'Whether it holds a refresh token (else it backs one access token, until expires_at)' }),
  session_id: Type.Union([Type.String(), Type.Null()], { description: 'The browser sign-in it came from (an id of GET /oauth2/account/sessions while that session lasts); null when unknown' }),
  current: Type.Boolean({ description: 'Whether the calling token was issued from it' }),
});

export const AccountGrants = Type.Object({ grants: Type.Array(AccountGrant, { description: 'Grants that still back a token, newest first' }) });

export const AccountSession = Type.Object({
  session_id: Type.String({ description: 'The session; also the sid of the ID tokens of its sign-in. DELETE /oauth2/account/sessions/{sessionId} ends it' }),
  method: Type.String({ description: 'How the user signed in: password, x509 or federation:<provider>' }),
  signed_in_at: instant('When the user signed in'),
  expires_at: instant('When the session ends by itself'),
});

export const AccountSessions = Type.Object({ sessions: Type.Array(AccountSession, { description: 'Signed-in browser sessions, newest first' }) });

export const GrantParams = Type.Object({
  grantId: Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', description: 'A grant_id of GET /oauth2/account/grants' }),
});

export const SessionParams = Type.Object({
  sessionId: Type.String({ pattern: '^[A-Za-z0-9_-]{32}$', description: 'A session_id of GET /oauth2/account/sessions' }),
});
