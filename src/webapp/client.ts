/**
 * The web application is a public OAuth client of this very service (authorization code with PKCE), so
 * every way of signing in that the login page offers works for it. It is built in rather than listed in
 * config.yaml because its redirect URI follows the public URL, which is known only once the server listens.
 */
import type { AppContext } from '../kernel/context.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN } from '../registry/index.ts';

export const WEB_CLIENT_ID = 'dirigo-web';

/** The page the authorization server sends the browser back to: the application's own callback route. */
export function webRedirectUri(publicUrl: string, path: string): string {
  return `${publicUrl}${path}callback`;
}

export function registerWebClient(ctx: AppContext, path: string): void {
  ctx.oauth.clients.addBuiltIn(WEB_CLIENT_ID, () => ({
    name: 'Dirigo web application',
    type: 'public',
    secretHash: undefined,
    redirectUris: [webRedirectUri(ctx.publicUrl, path)],
    grants: [GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN],
    refreshTokens: 'always',
    postLogoutRedirectUris: [`${ctx.publicUrl}${path}`],
    // Signing out of the application ends its grants too: nothing it held stays usable.
    revokeOnLogout: true,
    scopes: [],
    jwks: undefined,
    firstParty: true,
  }));
}
