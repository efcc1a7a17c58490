/**
 * The `accounting` section of the configuration (docs/accounting.md "Configuration"). Every key has a
 * default, so a config.yaml written before accounting existed loads unchanged.
 */
import { Type, type Static } from 'typebox';

export const AccountingConfigSchema = Type.Object(
  {
    /** The queue's history (queue-history.ts). */
    queue: Type.Object(
      {
        /** Seconds between two samples of the job counts. */
        sampleSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
        /** How long minute buckets are kept. */
        minuteRetentionDays: Type.Number({ exclusiveMinimum: 0, maximum: 366, default: 1 }),
        /** How long hour buckets are kept (day buckets are kept forever). */
        hourRetentionDays: Type.Number({ exclusiveMinimum: 0, maximum: 36600, default: 365 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** The APEL summaries for WLCG accounting. */
    apel: Type.Object(
      {
        /** The VO named in the summaries; '' lets the exporter choose. */
        vo: Type.String({ maxLength: 128, default: '' }),
        infrastructure: Type.String({ minLength: 1, maxLength: 128, default: 'dirigo' }),
        /** '' means the service's public host. */
        submitHost: Type.String({ maxLength: 256, default: '' }),
        /** Dirigo site name → GOCDB site name; a site not named keeps its own. */
        sites: Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Type.String({ minLength: 1, maxLength: 128 }), { default: {} }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false, default: {} },
);

export type AccountingConfig = Static<typeof AccountingConfigSchema>;

declare module '../kernel/config.ts' {
  interface AppConfig {
    accounting: AccountingConfig;
  }
}
