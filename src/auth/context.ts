/**
 * The services auth adds to every domain's context: signing keys, access tokens, the trusted CAs and the
 * authorization server's state (clients, grants, sessions).
 */
import type { TrustStore } from '../pki/index.ts';
import type { KeyStore } from './keys.ts';
import type { OAuthServices } from './services.ts';
import type { TokenService } from './tokens.ts';

declare module '../kernel/context.ts' {
  interface AppContext {
    readonly trustStore: TrustStore;
    readonly keys: KeyStore;
    readonly tokens: TokenService;
    readonly oauth: OAuthServices;
  }
}
