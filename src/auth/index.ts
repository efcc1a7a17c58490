/**
 * Identity and tokens: who a request speaks for (certificates, proxies, bearer tokens), the OAuth 2.0
 * endpoints and grants, signing keys, and the `admin keys rotate` command (login, logout, whoami and token are src/client-cli's).
 */
export { allowsCapability, hasGroupRights, noLongerAuthenticated, requireCapability, requireGroupRights, requireToken, type Principal } from './authenticate.ts';
export { authRoutes } from './routes.ts';
export { KeyStore } from './keys.ts';
export { TokenService } from './tokens.ts';
export { OAuthConfigSchema, TokensConfigSchema } from './config-schema.ts';
export { authMigrations } from './migrations.ts';
export { parseScope } from './scopes.ts';
export { rotateKeysCommand } from './admin-cli.ts';
// The surface federated login builds on: login providers, browser sessions and the interaction pages.
export { registerLoginProvider, type LoginProvider } from './login.ts';
export { checkedSession, completeLogin, field } from './interaction.ts';
export { errorPage, esc, sendPage } from './pages.ts';
// How pages, redirects and page-or-JSON errors appear in the OpenAPI document.
export { page, pageOrError, redirect } from './api-answers.ts';
export { OAuthServices } from './services.ts';
export type { BrowserSession } from './sessions.ts';
export { hashToken } from './store.ts';
