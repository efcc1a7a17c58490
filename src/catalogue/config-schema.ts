/** The `catalogue:` section of config.yaml. */
import { Type, type Static } from 'typebox';

export const CatalogueConfigSchema = Type.Object(
  {
    /** Body limit of POST /filecatalogue/bulk only (bytes); every other route keeps server.bodyLimit. */
    bulkBodyLimit: Type.Integer({ minimum: 1024, default: 256 * 1024 * 1024 }),
    /** Longest line of a bulk body (characters): one operation. */
    bulkLineLimit: Type.Integer({ minimum: 1024, default: 1024 * 1024 }),
    /**
     * Operations per transaction in a bulk request. Large: each transaction has a fixed cost (a dozen
     * statements and a commit), and file rows are pipelined within it.
     */
    bulkBatchSize: Type.Integer({ minimum: 1, maximum: 100000, default: 10000 }),
    /** Owner, group and mode of the root directory when the catalogue is first created. */
    rootOwner: Type.String({ default: 'root' }),
    rootGroup: Type.String({ default: 'dirigo_admin' }),
    /** 0o777: every user may create top-level directories, which they then own. */
    rootMode: Type.Integer({ minimum: 0, maximum: 0o1777, default: 0o1777 }),
    defaultDirectoryMode: Type.Integer({ minimum: 0, maximum: 0o1777, default: 0o755 }),
    defaultFileMode: Type.Integer({ minimum: 0, maximum: 0o777, default: 0o644 }),
  },
  { additionalProperties: false, default: {} },
);

export type CatalogueConfig = Static<typeof CatalogueConfigSchema>;

declare module '../kernel/config.ts' {
  interface AppConfig {
    catalogue: CatalogueConfig;
  }
}
