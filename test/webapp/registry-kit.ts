/** The service of the Registry page suites: bob is Admin (his default group has the property), carol manages dirigo_monitor. */
import { startTestService, type TestService } from '../helpers/service.ts';
import { oauthConfigWithDefaultGroup } from '../helpers/oauth-kit.ts';

export async function startRegistryWebService(dialect: 'sqlite' | 'postgres'): Promise<TestService> {
  const config = await oauthConfigWithDefaultGroup('bob', 'registry_admins');
  const registry = config.registry as { groups: { name: string; members: string[]; properties: string[]; managers?: string[] }[] };
  registry.groups.push({ name: 'registry_admins', members: ['bob'], properties: ['Admin'] });
  registry.groups = registry.groups.map((g) => (g.name === 'dirigo_monitor' ? { ...g, managers: ['carol'] } : g));
  return startTestService({ dialect, config });
}
