/**
 * The VO registry (docs/registry.md): Users and Audit for Admin (Users also for group managers, showing
 * their members), Groups and Requests for everyone (a group's members to Admin and its managers). The tab
 * is the address (`registry/users`, …); filters and the open user or group are its query parameters.
 */
import { Stack, Tabs, Title } from '@mantine/core';
import { navigate } from '../url-state.ts';
import { AuditTab } from './AuditTab.tsx';
import { GroupsTab } from './GroupsTab.tsx';
import { RequestsTab } from './RequestsTab.tsx';
import { useRegistryRights } from './rights.ts';
import { UsersTab } from './UsersTab.tsx';

const TABS = [
  { tab: 'users', label: 'Users', for: 'managers' },
  { tab: 'groups', label: 'Groups', for: 'all' },
  { tab: 'requests', label: 'Requests', for: 'all' },
  { tab: 'audit', label: 'Audit', for: 'admin' },
] as const;

export function RegistryPage({ tab, params }: { tab: string; params: URLSearchParams }) {
  const rights = useRegistryRights();
  const shown = TABS.filter((t) => t.for === 'all' || rights.admin || (t.for === 'managers' && rights.manages.length > 0));
  const current = shown.find((t) => t.tab === tab)?.tab ?? (shown[0]?.tab === 'users' ? 'users' : 'requests');
  return (
    <Stack gap="lg">
      <Title order={1} size="h2">
        Registry
      </Title>
      <Tabs value={current} onChange={(t) => t && navigate(`registry/${t}`)} keepMounted={false}>
        <Tabs.List aria-label="Registry">
          {shown.map((t) => (
            <Tabs.Tab key={t.tab} value={t.tab}>
              {t.label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        <Tabs.Panel value="users" pt="md">
          <UsersTab params={params} rights={rights} />
        </Tabs.Panel>
        <Tabs.Panel value="groups" pt="md">
          <GroupsTab params={params} rights={rights} />
        </Tabs.Panel>
        <Tabs.Panel value="requests" pt="md">
          <RequestsTab rights={rights} />
        </Tabs.Panel>
        <Tabs.Panel value="audit" pt="md">
          <AuditTab params={params} />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
