/**
 * The grant types the token endpoint serves, each with its handler: the one list the endpoint dispatches
 * on and the discovery metadata and OpenAPI document announce (`grant_types_supported`). A new grant is
 * a handler in this folder and a line here.
 */
import { GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, GRANT_TOKEN_EXCHANGE } from '../../registry/index.ts';
import { authorizationCodeGrant } from './authorization-code.ts';
import { clientCredentialsGrant } from './client-credentials.ts';
import { deviceCodeGrant } from './device-code.ts';
import type { GrantHandler } from './grant.ts';
import { refreshTokenGrant } from './refresh-token.ts';
import { tokenExchangeGrant } from './token-exchange.ts';

export type Grants = ReadonlyMap<string, GrantHandler>;

/** In the order the metadata lists them. */
export const supportedGrants: Grants = new Map<string, GrantHandler>([
  [GRANT_CLIENT_CREDENTIALS, clientCredentialsGrant],
  [GRANT_AUTHORIZATION_CODE, authorizationCodeGrant],
  [GRANT_REFRESH_TOKEN, refreshTokenGrant],
  [GRANT_DEVICE_CODE, deviceCodeGrant],
  [GRANT_TOKEN_EXCHANGE, tokenExchangeGrant],
]);
