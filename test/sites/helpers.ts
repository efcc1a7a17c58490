/** A service with three sites and a group of site managers (bob), for the sites suites. */
import { startTestService, testRegistry, type TestService } from '../helpers/service.ts';
import type { TestDialect } from '../helpers/dialects.ts';

export const SITES = [
  { name: 'Local', type: 'local', slots: 1 },
  { name: 'Pool', type: 'agents' },
  { name: 'CERN', type: 'agents' },
];

/** The test registry plus dirigo_sites (bob), whose property is SiteManager. */
export function sitesRegistry() {
  const registry = testRegistry();
  return { ...registry, groups: [...registry.groups, { name: 'dirigo_sites', members: ['bob'], properties: ['SiteManager'] }] };
}

export function startSitesService(dialect: TestDialect, options: { sharing?: TestService; config?: Record<string, unknown> } = {}): Promise<TestService> {
  return startTestService({ dialect, ...(options.sharing ? { sharing: options.sharing } : {}), config: { registry: sitesRegistry(), jobs: { sites: SITES }, ...options.config } });
}
