/**
 * Users (Admin; a group manager sees the members of their groups): filtered by status, group and a text
 * in the address, a page at a time; a user's panel opens from the list (`?user=`). Add user for Admin.
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Button, Group, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { updateParams } from '../url-state.ts';
import type { RegistryRights } from './rights.ts';
import type { UserList, UserStatusFilter } from './types.ts';
import { UserForm } from './UserForm.tsx';
import { UserPanel } from './UserPanel.tsx';
import { UserStatusBadge } from './UserStatus.tsx';

const PER_PAGE = 50;
const STATUSES: UserStatusFilter[] = ['active', 'suspended', 'expired', 'removed'];

export function UsersTab({ params, rights }: { params: URLSearchParams; rights: RegistryRights }) {
  const status = (params.get('status') ?? '') as UserStatusFilter | '';
  const group = params.get('group') ?? '';
  const q = params.get('q') ?? '';
  const page = Math.max(1, Number(params.get('page') ?? 1) || 1);
  const selected = params.get('user') ?? undefined;
  const [list, setList] = useState<UserList>();
  const [error, setError] = useState<string>();
  const [adding, setAdding] = useState(false);

  const load = useCallback(async () => {
    try {
      const query = { ...(status ? { status } : {}), ...(group ? { group } : {}), ...(q ? { q } : {}), page, per_page: PER_PAGE };
      setList(unwrap(await api.GET('/registry/users', { params: { query } })));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [status, group, q, page]);
  useEffect(() => void load(), [load]);

  const changed = async () => {
    await Promise.all([load(), rights.reload()]);
  };
  const pages = list ? Math.max(1, Math.ceil(list.total / PER_PAGE)) : 1;

  return (
    <Stack gap="md">
      {error && (
        <Alert color="red" role="alert">
          {error}
        </Alert>
      )}
      <Group gap="sm" align="flex-end">
        <TextInput label="Name, e-mail or display name" placeholder="any" value={q} onChange={(e) => updateParams({ q: e.currentTarget.value, page: undefined })} w={260} maxLength={256} />
        <Select label="Status" placeholder="any" clearable data={STATUSES} value={status || null} onChange={(v) => updateParams({ status: v ?? undefined, page: undefined })} w={160} />
        <Select label="Group" placeholder="any" clearable searchable data={rights.groups.map((g) => g.name)} value={group || null} onChange={(v) => updateParams({ group: v ?? undefined, page: undefined })} w={200} />
        {rights.admin && <Button onClick={() => setAdding(true)}>Add user</Button>}
      </Group>
      {list && (
        <Text size="sm" data-testid="user-count">
          {list.total === 0 ? 'No user matches.' : `Users ${(page - 1) * PER_PAGE + 1}–${(page - 1) * PER_PAGE + list.users.length} of ${list.total}.`}
        </Text>
      )}
      <Table.ScrollContainer minWidth={800}>
        <Table striped highlightOnHover data-testid="registry-users">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>User</Table.Th>
              <Table.Th>Display name</Table.Th>
              <Table.Th>E-mail</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Groups</Table.Th>
              <Table.Th>Expires</Table.Th>
              <Table.Th>Managed by</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list?.users.map((u) => (
              <Table.Tr key={u.name} data-user={u.name} data-status={u.status}>
                <Table.Td>
                  <Button size="compact-sm" variant="subtle" onClick={() => updateParams({ user: u.name }, false)} aria-label={`Open user ${u.name}`}>
                    {u.name}
                  </Button>
                </Table.Td>
                <Table.Td>{u.displayName ?? '—'}</Table.Td>
                <Table.Td>{u.email ?? '—'}</Table.Td>
                <Table.Td>
                  <UserStatusBadge user={u} />
                </Table.Td>
                <Table.Td>{u.groups.join(', ') || '—'}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{u.expiresAt?.slice(0, 10) ?? '—'}</Table.Td>
                <Table.Td>{u.managedBy}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {pages > 1 && (
        <Group gap="xs">
          <Button variant="default" size="xs" disabled={page <= 1} onClick={() => updateParams({ page: page > 2 ? String(page - 1) : undefined })}>
            Previous
          </Button>
          <Text size="sm">
            Page {page} of {pages}
          </Text>
          <Button variant="default" size="xs" disabled={page >= pages} onClick={() => updateParams({ page: String(page + 1) })}>
            Next
          </Button>
        </Group>
      )}
      {selected && <UserPanel name={selected} rights={rights} onClose={() => updateParams({ user: undefined }, false)} onChanged={changed} />}
      {adding && (
        <UserForm
          onCancel={() => setAdding(false)}
          onDone={(name) => {
            setAdding(false);
            void changed();
            updateParams({ user: name }, false);
          }}
        />
      )}
    </Stack>
  );
}
