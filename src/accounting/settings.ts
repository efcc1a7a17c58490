/**
 * The `accounting` configuration section (docs/accounting.md "Configuration"), read with its defaults.
 * The section's schema is added with the queue sampler; until then it is read here, and only here, as
 * optional, so that nothing else depends on its shape.
 */
import type { AppConfig } from '../kernel/config.ts';

export interface AccountingSettings {
  queue: { minuteRetentionDays: number; hourRetentionDays: number };
  apel: { vo: string; infrastructure: string; submitHost: string; sites: Readonly<Record<string, string>> };
}

interface Section {
  queue?: Partial<AccountingSettings['queue']>;
  apel?: Partial<AccountingSettings['apel']>;
}

export function accountingSettings(config: AppConfig): AccountingSettings {
  const s = ((config as unknown as { accounting?: Section }).accounting ?? {}) as Section;
  return {
    queue: { minuteRetentionDays: s.queue?.minuteRetentionDays ?? 1, hourRetentionDays: s.queue?.hourRetentionDays ?? 365 },
    apel: { vo: s.apel?.vo || 'dirigo', infrastructure: s.apel?.infrastructure || 'dirigo', submitHost: s.apel?.submitHost ?? '', sites: s.apel?.sites ?? {} },
  };
}
