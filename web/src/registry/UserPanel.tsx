/**
 * One user: details, DNs, upstream identities, groups with role and end date, status with its reason.
 * Admin may edit, suspend (asks a reason), reinstate and remove (asks first); the server's refusal
 * (e.g. a field managed by config.yaml) is shown.
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Button, Drawer, Group, List, Stack, Table, Text, Title } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { FieldTable } from '../FieldTable.tsx';
import { formatTimestamp } from '../time-format.ts';
import { ConfirmAction } from './ConfirmAction.tsx';
import { day } from './dates.ts';
import type { RegistryRights } from './rights.ts';
import type { RegistryUser } from './types.ts';
import { UserForm } from './UserForm.tsx';
import { UserStatusBadge } from './UserStatus.tsx';

type Asking = 'suspend' | 'remove' | 'edit' | undefined;

export function UserPanel({ name, rights, onClose, onChanged }: { name: string; rights: RegistryRights; onClose(): void; onChanged(): Promise<void> }) {
  const [user, setUser] = useState<RegistryUser>();
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [asking, setAsking] = useState<Asking>();
  const load = useCallback(async () => {
    try {
      setUser(unwrap(await api.GET('/registry/users/{name}', { params: { path: { name } } })));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [name]);
  useEffect(() => void load(), [load]);

  const act = async (what: string, call: () => Promise<{ data?: unknown; error?: unknown; response: Response }>) => {
    setAsking(undefined);
    try {
      unwrap(await call());
      setNotice(what);
      setError(undefined);
      await Promise.all([load(), onChanged()]);
    } catch (e) {
      setNotice(undefined);
      setError((e as Error).message);
    }
  };
  const path = { params: { path: { name } } };
  const memberships = rights.groups.flatMap((g) => (g.members ?? []).filter((m) => m.user === name).map((m) => ({ group: g.name, role: m.role, endsAt: m.endsAt })));
  const unseen = (user?.groups ?? []).filter((g) => !memberships.some((m) => m.group === g));

  return (
    <Drawer opened onClose={onClose} position="right" size="xl" title={`User ${name}`} closeButtonProps={{ 'aria-label': 'Close the user panel' }}>
      <Stack gap="md" data-testid="user-panel">
        {error && (
          <Alert color="red" role="alert">
            {error}
          </Alert>
        )}
        {notice && (
          <Alert color="blue" role="status" withCloseButton onClose={() => setNotice(undefined)} closeButtonLabel="Dismiss">
            {notice}
          </Alert>
        )}
        {user && (
          <>
            {rights.admin && (
              <Group gap="xs">
                {/* config.yaml owns such a user's fields (the server refuses changes); status may still change. */}
                {user.managedBy === 'api' && (
                  <Button size="xs" variant="light" onClick={() => setAsking('edit')}>
                    Edit
                  </Button>
                )}
                {user.status === 'active' && (
                  <Button size="xs" variant="light" color="red" onClick={() => setAsking('suspend')}>
                    Suspend
                  </Button>
                )}
                {user.status !== 'active' && (
                  <Button size="xs" variant="light" onClick={() => void act(`${name} is reinstated.`, () => api.POST('/registry/users/{name}/reinstate', path))}>
                    Reinstate
                  </Button>
                )}
                {user.status !== 'removed' && (
                  <Button size="xs" variant="light" color="red" onClick={() => setAsking('remove')}>
                    Remove
                  </Button>
                )}
              </Group>
            )}
            <FieldTable
              striped
              data-testid="user-fields"
              rows={[
                ['Status', <UserStatusBadge key="s" user={user} />],
                ['Reason', user.statusReason ?? user.barred ?? '—'],
                ['Display name', user.displayName ?? '—'],
                ['E-mail', user.email ?? '—'],
                ['Expires', day(user.expiresAt)],
                ['Default group', user.defaultGroup ?? '—'],
                ['Managed by', user.managedBy === 'config' ? 'config.yaml' : 'the API'],
                ['Created', formatTimestamp(user.createdAt)],
                ['Changed', formatTimestamp(user.updatedAt)],
              ]}
            />
            <Title order={3} size="h5">
              Certificate DNs
            </Title>
            {user.dns.length === 0 ? (
              <Text size="sm">None.</Text>
            ) : (
              <List size="sm" data-testid="user-dns">
                {user.dns.map((dn) => (
                  <List.Item key={dn}>{dn}</List.Item>
                ))}
              </List>
            )}
            <Title order={3} size="h5">
              Upstream identities
            </Title>
            {user.identities.length === 0 ? (
              <Text size="sm">None.</Text>
            ) : (
              <List size="sm">
                {user.identities.map((i) => (
                  <List.Item key={`${i.issuer} ${i.subject}`}>
                    {i.subject} at {i.issuer}
                  </List.Item>
                ))}
              </List>
            )}
            <Title order={3} size="h5">
              Groups
            </Title>
            {memberships.length + unseen.length === 0 ? (
              <Text size="sm">No group.</Text>
            ) : (
              <Table striped data-testid="user-groups">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Group</Table.Th>
                    <Table.Th>Role</Table.Th>
                    <Table.Th>Ends</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {memberships.map((m) => (
                    <Table.Tr key={m.group} data-group={m.group}>
                      <Table.Td>{m.group}</Table.Td>
                      <Table.Td>{m.role}</Table.Td>
                      <Table.Td>{day(m.endsAt)}</Table.Td>
                    </Table.Tr>
                  ))}
                  {unseen.map((g) => (
                    <Table.Tr key={g} data-group={g}>
                      <Table.Td>{g}</Table.Td>
                      <Table.Td>—</Table.Td>
                      <Table.Td>—</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
          </>
        )}
      </Stack>
      {asking === 'edit' && user && (
        <UserForm
          user={user}
          onCancel={() => setAsking(undefined)}
          onDone={() => {
            setAsking(undefined);
            setNotice(`${name} is saved.`);
            void Promise.all([load(), onChanged()]);
          }}
        />
      )}
      {asking === 'suspend' && (
        <ConfirmAction
          title={`Suspend ${name}?`}
          effect="They get no new tokens; their refresh tokens and browser sign-ins stop working at once. Their running jobs keep running. Reinstating restores access."
          confirm={`Suspend ${name}`}
          reason={{ label: 'Reason', required: true }}
          onCancel={() => setAsking(undefined)}
          onConfirm={(reason) => void act(`${name} is suspended.`, () => api.POST('/registry/users/{name}/suspend', { ...path, body: { reason: reason ?? '' } }))}
        />
      )}
      {asking === 'remove' && (
        <ConfirmAction
          title={`Remove ${name}?`}
          effect="They lose every membership and get no tokens. Their name stays, so that their jobs and files remain attributed; an admin may reinstate them."
          confirm={`Remove ${name}`}
          onCancel={() => setAsking(undefined)}
          onConfirm={() => void act(`${name} is removed.`, () => api.DELETE('/registry/users/{name}', path))}
        />
      )}
    </Drawer>
  );
}
