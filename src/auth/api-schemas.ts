/**
 * Wire shapes of the OAuth 2.0 and OpenID Connect endpoints, shared by the routes that validate or
 * serialize them and by the OpenAPI document: the form-encoded requests (RFC 6749 §3.2,
 * RFC 7009 §2.1, RFC 7662 §2.1, RFC 8628 §3.1) and the JSON answers. Answers keep unknown members
 * (`additionalProperties`): fast-json-stringify would otherwise drop what a schema does not name.
 */
import { Type } from 'typebox';
import { CLIENT_ASSERTION_TYPE } from './client-assertion.ts';

const text = (description: string) => Type.Optional(Type.String({ description }));

/** RFC 6749 §2.3.1 (client_secret_post) and RFC 7523 §2.2 (client assertions); Basic goes in the header. */
const clientAuthentication = {
  client_id: text('The client id; required of public clients (RFC 6749 §3.2.1)'),
  client_secret: text('client_secret_post (RFC 6749 §2.3.1); HTTP Basic is preferred. Never in the URL'),
  client_assertion_type: Type.Optional(Type.Literal(CLIENT_ASSERTION_TYPE, { description: 'private_key_jwt or client_secret_jwt (RFC 7523 §2.2)' })),
  client_assertion: text('A JWT signed by the client (RFC 7523 §2.2)'),
};

/** RFC 6749 §4.1.1 with PKCE (RFC 7636 §4.3) and OpenID Connect Core §3.1.2.1. */
export const AuthorizeQuery = Type.Object(
  {
    response_type: Type.Literal('code', { description: 'RFC 6749 §4.1.1: only the authorization code flow' }),
    client_id: Type.String({ description: 'The registered client id' }),
    redirect_uri: text('One of the client\'s registered redirect URIs; optional when it registered exactly one'),
    state: text('Returned unchanged with the answer; at most 2048 characters'),
    scope: text('Space-separated scopes; wlcg.groups:/<group> names the group'),
    code_challenge: text('RFC 7636 §4.2: the S256 challenge, 43-128 characters; required of public clients'),
    code_challenge_method: Type.Optional(Type.Literal('S256', { description: 'RFC 7636 §4.3: required with code_challenge; plain is refused' })),
    response_mode: Type.Optional(Type.Literal('query', { description: 'OAuth 2.0 Multiple Response Types §2.1: only query' })),
    nonce: text('OpenID Connect Core §3.1.2.1: echoed in the ID token; at most 2048 characters'),
    prompt: text('OpenID Connect Core §3.1.2.1: none, login, consent or select_account, space-separated'),
    max_age: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}$', description: 'OpenID Connect Core §3.1.2.1: the oldest sign-in accepted, in seconds' })),
    login_hint: text('OpenID Connect Core §3.1.2.1: the user name to propose; at most 256 characters'),
    id_token_hint: text('OpenID Connect Core §3.1.2.1: an ID token of this server for the user expected'),
    group: text('Dirigo: the group to preselect on the consent page'),
    setup: text('Dirigo: the setup to preselect on the consent page'),
  },
  { additionalProperties: true },
);

/** Token request parameters of every grant (RFC 6749 §4.1.3, §4.4.2, §6; RFC 8628 §3.4; RFC 8693 §2.1; flow A). */
const tokenParameters = (grants: readonly string[]) => ({
  grant_type: Type.Unsafe<string>({ type: 'string', enum: [...grants], description: 'The grant; client_credentials with a user certificate is flow A' }),
  group: text('Flow A, refresh, token exchange: the group the token is for'),
  setup: text('Flow A, refresh, token exchange: the setup the token is for'),
  scope: text('Space-separated scopes (RFC 6749 §3.3)'),
  code: text('authorization_code: the code of the authorization response (RFC 6749 §4.1.3)'),
  redirect_uri: text('authorization_code: the redirect_uri of the authorization request, when it named one'),
  code_verifier: text('authorization_code: the PKCE verifier (RFC 7636 §4.5)'),
  refresh_token: text('refresh_token: the refresh token (RFC 6749 §6)'),
  device_code: text('device_code: the device code (RFC 8628 §3.4)'),
  subject_token: text('token exchange: the access token to exchange (RFC 8693 §2.1)'),
  subject_token_type: text('token exchange: urn:ietf:params:oauth:token-type:access_token or …:jwt'),
  actor_token: text('token exchange: not supported; refused when given'),
  actor_token_type: text('token exchange: not supported; refused when given'),
  requested_token_type: text('token exchange: urn:ietf:params:oauth:token-type:access_token'),
  audience: text('token exchange: the audience of the new token (RFC 8693 §2.1)'),
  resource: text('token exchange: the resource of the new token (RFC 8693 §2.1)'),
});

/** RFC 6749 §3.2: the form body of POST /oauth2/token. */
export const TokenForm = (grants: readonly string[]) =>
  Type.Object({ ...tokenParameters(grants), ...clientAuthentication }, { description: 'Token request (RFC 6749 §4.1.3, §4.4.2, §6; RFC 8628 §3.4; RFC 8693 §2.1)' });

/**
 * GET /oauth2/token: the same parameters in the query (flow A, README), but never client_secret (RFC 6749 §2.3.1).
 * Read by the handler, not by the validator (the route sets attachValidation): a repeated parameter is
 * the endpoint's own invalid_request.
 */
export const TokenQuery = (grants: readonly string[]) => {
  const { client_secret: _secret, ...auth } = clientAuthentication;
  return Type.Object({ ...tokenParameters(grants), ...auth }, { additionalProperties: true });
};

/** RFC 6749 §5.1. */
export const TokenResponse = Type.Object(
  {
    access_token: Type.String({ description: 'An RFC 9068 JWT access token' }),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ minimum: 0, description: 'Seconds until the access token expires' }),
    scope: Type.String(),
    group: Type.Optional(Type.String({ description: 'The token\'s group; absent from a client\'s own token (client_credentials with client authentication)' })),
    setup: Type.Optional(Type.String({ description: 'The token\'s setup; absent from a client\'s own token' })),
    refresh_token: Type.Optional(Type.String()),
    issued_token_type: Type.Optional(Type.String({ description: 'Token exchange (RFC 8693 §2.2.1)' })),
    id_token: Type.Optional(Type.String({ description: 'OpenID Connect Core §3.1.3.3: when the scope has openid' })),
  },
  { additionalProperties: true },
);

/** RFC 8628 §3.1. */
export const DeviceAuthorizationForm = Type.Object(
  { scope: text('Space-separated scopes; wlcg.groups:/<group> names the group'), ...clientAuthentication },
  { description: 'Device authorization request (RFC 8628 §3.1)' },
);

/** RFC 8628 §3.2. */
export const DeviceAuthorizationResponse = Type.Object({
  device_code: Type.String(),
  user_code: Type.String({ description: 'The code the user enters, as XXXX-XXXX' }),
  verification_uri: Type.String({ format: 'uri' }),
  verification_uri_complete: Type.String({ format: 'uri' }),
  expires_in: Type.Integer({ minimum: 0 }),
  interval: Type.Integer({ minimum: 0, description: 'Seconds to wait between token requests' }),
});

const tokenToCheck = {
  token: Type.String({ description: 'The access or refresh token' }),
  token_type_hint: Type.Optional(Type.String({ description: 'access_token or refresh_token; only speeds up the lookup' })),
};

/** RFC 7009 §2.1. */
export const RevocationForm = Type.Object({ ...tokenToCheck, ...clientAuthentication }, { description: 'Revocation request (RFC 7009 §2.1)' });

/** RFC 7009 §2.2: the body says nothing; 200 is the answer. */
export const RevocationResponse = Type.Object({});

/** RFC 7662 §2.1: confidential clients only. */
export const IntrospectionForm = Type.Object({ ...tokenToCheck, ...clientAuthentication }, { description: 'Introspection request (RFC 7662 §2.1)' });

/** RFC 7662 §2.2: `active` alone for an inactive token; the token's claims for an active one. */
export const IntrospectionResponse = Type.Object(
  {
    active: Type.Boolean(),
    scope: Type.Optional(Type.String()),
    client_id: Type.Optional(Type.String()),
    username: Type.Optional(Type.String()),
    token_type: Type.Optional(Type.String({ description: 'Bearer for access tokens, refresh_token for refresh tokens' })),
    exp: Type.Optional(Type.Integer()),
    iat: Type.Optional(Type.Integer()),
    nbf: Type.Optional(Type.Integer()),
    sub: Type.Optional(Type.String()),
    aud: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
    iss: Type.Optional(Type.String()),
    jti: Type.Optional(Type.String()),
    group: Type.Optional(Type.String()),
    setup: Type.Optional(Type.String()),
    'wlcg.groups': Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: true },
);

/** RFC 6750 §2.2: the access token may come in a form body instead of the header. */
export const UserInfoForm = Type.Object({ access_token: text('The access token (RFC 6750 §2.2); never together with the header') });

/**
 * OpenID Connect Core §5.3.2 for a token of an OpenID Connect sign-in (the claims its scopes allow,
 * §5.4); Dirigo's own description of the caller (group, setup, groups, properties) for other tokens.
 */
export const UserInfo = Type.Object(
  {
    sub: Type.String(),
    preferred_username: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    email: Type.Optional(Type.String()),
    email_verified: Type.Optional(Type.Boolean()),
    'wlcg.groups': Type.Optional(Type.Array(Type.String())),
    eduperson_entitlement: Type.Optional(Type.Array(Type.String())),
    group: Type.Optional(Type.String()),
    setup: Type.Optional(Type.String()),
    groups: Type.Optional(Type.Array(Type.String())),
    properties: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: true },
);

/** RFC 7517 §5. */
export const Jwks = Type.Object({
  keys: Type.Array(
    Type.Object(
      { kty: Type.String(), kid: Type.Optional(Type.String()), use: Type.Optional(Type.String()), alg: Type.Optional(Type.String()) },
      { additionalProperties: true, description: 'A public JSON Web Key (RFC 7517 §4)' },
    ),
  ),
});

const uri = (description: string) => Type.String({ format: 'uri', description });
const list = (description: string) => Type.Array(Type.String(), { description });

/** RFC 8414 §2 and OpenID Connect Discovery 1.0 §3; members beyond these are kept. */
export const ServerMetadata = Type.Object(
  {
    issuer: uri('The issuer identifier'),
    authorization_endpoint: uri('RFC 6749 §3.1'),
    token_endpoint: uri('RFC 6749 §3.2'),
    device_authorization_endpoint: uri('RFC 8628 §4'),
    revocation_endpoint: uri('RFC 7009'),
    introspection_endpoint: uri('RFC 7662'),
    userinfo_endpoint: uri('OpenID Connect Core §5.3'),
    end_session_endpoint: uri('OpenID Connect RP-Initiated Logout 1.0'),
    jwks_uri: uri('RFC 7517'),
    registration_endpoint: Type.Optional(uri('RFC 7591; only while dynamic registration is enabled')),
    grant_types_supported: list('Grant types the token endpoint takes'),
    response_types_supported: list('code'),
    scopes_supported: list('Scopes'),
    code_challenge_methods_supported: list('S256'),
    token_endpoint_auth_methods_supported: list('Client authentication methods'),
  },
  { additionalProperties: true },
);
