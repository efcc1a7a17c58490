/** The `downloads:` section of config.yaml: the files (the single executable) the service offers under /downloads/. */
import { Type, type Static } from 'typebox';

export const DownloadsConfigSchema = Type.Object(
  {
    /** Offer the files of `dir` at /downloads/ (without a token: they are public binaries). */
    enabled: Type.Boolean({ default: true }),
    /** The folder of the files offered; relative paths resolve against the data dir. Default: <data dir>/downloads. */
    dir: Type.String({ minLength: 1, default: 'downloads' }),
  },
  { additionalProperties: false, default: {} },
);

export type DownloadsConfig = Static<typeof DownloadsConfigSchema>;

declare module '../kernel/config.ts' {
  interface AppConfig {
    downloads: DownloadsConfig;
  }
}
