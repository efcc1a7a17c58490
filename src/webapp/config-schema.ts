/** The `webapp:` section of config.yaml: the browser application served beside the API. */
import { Type, type Static } from 'typebox';

export const WebAppConfigSchema = Type.Object(
  {
    /** Serve the web application (job monitor, catalogue browser, account). */
    enabled: Type.Boolean({ default: true }),
    /** Where it is served: an absolute path ending in a slash. */
    path: Type.String({ pattern: '^/([a-z0-9-]+/)+$', default: '/app/' }),
    /** The built application (`npm run build:web`); relative paths resolve against the data dir. Default: web/dist of this installation. */
    dir: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false, default: {} },
);

export type WebAppConfig = Static<typeof WebAppConfigSchema>;

declare module '../kernel/config.ts' {
  interface AppConfig {
    webapp: WebAppConfig;
  }
}
