/** The sites domain's view of jobs.sites: names and types only (sites sit below jobs and never read its configuration). */
import type { AppConfig } from '../kernel/config.ts';
import type { ConfiguredSite } from '../sites/index.ts';

export function configuredSites(config: AppConfig): ConfiguredSite[] {
  return config.jobs.sites.map((s) => ({ name: s.name, type: s.type }));
}
