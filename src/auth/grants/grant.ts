/**
 * What every grant handler takes and answers (RFC 6749 §5.1): the shared shape of the token endpoint's
 * table of grants, kept apart from the endpoint so that grants and endpoint do not import each other.
 */
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../kernel/context.ts';

export type TokenParameters = Readonly<Record<string, string>>;

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  /** Absent from a client's own token (client_credentials with client authentication). */
  group?: string;
  setup?: string;
  refresh_token?: string;
  issued_token_type?: string;
  /** OpenID Connect Core §3.1.3.3, when the scope has `openid`. */
  id_token?: string;
}

export type GrantHandler = (
  ctx: AppContext,
  params: TokenParameters,
  request: FastifyRequest,
) => Promise<TokenResponse>;
