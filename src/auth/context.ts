/** The services auth adds to every domain's context: signing keys, access tokens and the trusted CAs. */
import type { TrustStore } from '../pki/index.ts';
import type { KeyStore } from './keys.ts';
import type { TokenService } from './tokens.ts';

declare module '../kernel/context.ts' {
  interface AppContext {
    readonly trustStore: TrustStore;
    readonly keys: KeyStore;
    readonly tokens: TokenService;
  }
}
