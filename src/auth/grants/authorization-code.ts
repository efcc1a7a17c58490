/**
 * `grant_type=authorization_code` (RFC 6749 §4.1.3) with PKCE (RFC 7636 §4.5-4.6). A code is single-use:
 * presenting it again revokes the grant and every token issued from it (§4.1.2, RFC 9700 §4.5.3).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../kernel/context.ts';
import { InvalidGrant, InvalidRequest, UnauthorizedClient } from '../../kernel/errors.ts';
import { GRANT_AUTHORIZATION_CODE, issuesRefreshToken, matchesRedirectUri } from '../../registry/index.ts';
import { authenticateClient, type AuthenticatedClient } from '../client-auth.ts';
import type { CodeRow } from '../store.ts';
import type { TokenParameters, TokenResponse } from './grant.ts';
import { grantTokenResponse } from './issue.ts';

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

interface State {
  params: TokenParameters;
  auth: AuthenticatedClient;
  row?: CodeRow;
}

type Rule = (ctx: AppContext, s: State) => Promise<void> | void;

function s256(verifier: string): Buffer {
  return createHash('sha256').update(verifier, 'ascii').digest();
}

const rules: Rule[] = [
  function clientMayUseGrant(_ctx, s) {
    if (!s.auth.client.grants.includes(GRANT_AUTHORIZATION_CODE)) throw new UnauthorizedClient(`${s.auth.client.clientId} may not use the authorization code grant`);
  },
  function codePresent(_ctx, s) {
    if (!s.params.code) throw new InvalidRequest('code is required');
  },
  function verifierSyntax(_ctx, s) {
    const v = s.params.code_verifier;
    if (v !== undefined && !VERIFIER.test(v)) throw new InvalidRequest('code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636 §4.1)');
  },
  async function codeKnown(ctx, s) {
    s.row = await ctx.oauth.store.findCode(s.params.code!);
    if (!s.row) throw new InvalidGrant('the code is invalid');
  },
  // §4.1.2: a used code means it leaked; revoke what it produced.
  async function notReplayed(ctx, s) {
    if (s.row!.used_at !== null) {
      if (s.row!.grant_id) await ctx.oauth.store.revokeGrant(s.row!.grant_id);
      throw new InvalidGrant('the code was already used; the tokens issued from it are revoked');
    }
  },
  function notExpired(_ctx, s) {
    if (s.row!.expires_at < new Date().toISOString()) throw new InvalidGrant('the code has expired');
  },
  // §4.1.3: the code was issued to this client.
  function sameClient(_ctx, s) {
    if (s.row!.client_id !== s.auth.client.clientId) throw new InvalidGrant('the code was issued to another client');
  },
  // §4.1.3: redirect_uri must repeat the authorization request's one when that had one.
  function sameRedirectUri(_ctx, s) {
    const original = s.row!.redirect_uri;
    if (original !== null && s.params.redirect_uri === undefined) throw new InvalidGrant('redirect_uri is required because the authorization request had one');
    if (original !== null && s.params.redirect_uri !== original) throw new InvalidGrant('redirect_uri differs from the authorization request');
    // Without one in the request the registered URI was used; repeating that one is harmless.
    if (original === null && s.params.redirect_uri !== undefined && !(s.auth.client.redirectUris.length === 1 && matchesRedirectUri(s.auth.client, s.params.redirect_uri))) {
      throw new InvalidGrant('redirect_uri was not part of the authorization request');
    }
  },
  // RFC 9700 §2.1.1: a verifier without a challenge is refused (PKCE downgrade).
  function pkce(_ctx, s) {
    const challenge = s.row!.code_challenge;
    const verifier = s.params.code_verifier;
    if (challenge === null) {
      if (verifier !== undefined) throw new InvalidGrant('code_verifier was sent but the authorization request had no code_challenge');
      return;
    }
    if (verifier === undefined) throw new InvalidGrant('code_verifier is required (RFC 7636 §4.5)');
    const want = Buffer.from(challenge, 'base64url');
    const got = s256(verifier);
    if (want.length !== got.length || !timingSafeEqual(want, got)) throw new InvalidGrant('code_verifier does not match the code_challenge (RFC 7636 §4.6)');
  },
];

export async function authorizationCodeGrant(ctx: AppContext, params: TokenParameters, request: FastifyRequest): Promise<TokenResponse> {
  const s: State = { params, auth: await authenticateClient(ctx, request, params) };
  for (const rule of rules) await rule(ctx, s);
  const row = s.row!;
  const store = ctx.oauth.store;
  const redeemed = await store.redeemCode(row, issuesRefreshToken(s.auth.client, row.scope.split(' ')));
  if (!redeemed) {
    // Lost the race against another redemption: the same replay rule applies.
    const again = await store.findCode(params.code!);
    if (again?.grant_id) await store.revokeGrant(again.grant_id);
    throw new InvalidGrant('the code was already used; the tokens issued from it are revoked');
  }
  return grantTokenResponse(ctx, redeemed.grant, row.scope, redeemed.refreshToken, true);
}
