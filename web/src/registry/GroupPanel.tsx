/**
 * One group: properties and share (Admin edits), description (Admin or its managers), members with role
 * and end date. Admin and the group's managers add, change and remove members; removing asks first.
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Badge, Button, Drawer, Group, NumberInput, Stack, Table, TagsInput, Text, Textarea, Title } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { FieldTable } from '../FieldTable.tsx';
import { ConfirmAction } from './ConfirmAction.tsx';
import { day } from './dates.ts';
import { MemberForm } from './MemberForm.tsx';
import type { RegistryRights } from './rights.ts';
import type { RegistryGroup } from './types.ts';

/** The properties the service knows (src/registry/registry.ts Property); others may be typed. */
const KNOWN_PROPERTIES = ['Admin', 'JobAdministrator', 'JobMonitor', 'JobSharing', 'CatalogueAdministrator', 'Pilot', 'SiteManager'];

type Member = NonNullable<RegistryGroup['members']>[number];

function GroupEditor({ group, admin, onSaved, onCancel }: { group: RegistryGroup; admin: boolean; onSaved(): void; onCancel(): void }) {
  const [properties, setProperties] = useState(group.properties);
  const [share, setShare] = useState<number | string>(group.share ?? '');
  const [description, setDescription] = useState(group.description ?? '');
  const [error, setError] = useState<string>();
  const save = async () => {
    try {
      const body = {
        ...(admin ? { properties, share: share === '' ? null : Number(share) } : {}),
        description: description.trim() || null,
      };
      unwrap(await api.PATCH('/registry/groups/{name}', { params: { path: { name: group.name } }, body }));
      onSaved();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <Stack gap="sm" data-testid="group-editor">
        {error && (
          <Alert color="red" role="alert">
            {error}
          </Alert>
        )}
        {admin && <TagsInput label="Properties" data={KNOWN_PROPERTIES} value={properties} onChange={setProperties} clearable comboboxProps={{ withinPortal: true }} />}
        {admin && <NumberInput label="Fair share" description="Empty: the jobs configuration's share, or 1" min={0} decimalScale={3} value={share} onChange={setShare} w={220} />}
        <Textarea label="Description" autosize minRows={1} maxLength={512} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
        <Group gap="xs">
          <Button type="submit" size="xs">
            Save
          </Button>
          <Button variant="default" size="xs" onClick={onCancel}>
            Cancel
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

export function GroupPanel({ name, rights, onClose, onChanged }: { name: string; rights: RegistryRights; onClose(): void; onChanged(): Promise<void> }) {
  const [group, setGroup] = useState<RegistryGroup>();
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [editing, setEditing] = useState(false);
  const [memberForm, setMemberForm] = useState<{ member?: Member }>();
  const [removing, setRemoving] = useState<string>();
  const [users, setUsers] = useState<string[]>([]);
  const mayManage = rights.admin || rights.manages.includes(name);

  const load = useCallback(async () => {
    try {
      setGroup(unwrap(await api.GET('/registry/groups/{name}', { params: { path: { name } } })));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [name]);
  useEffect(() => void load(), [load]);
  // Names to offer when adding a member: whoever the viewer may list (Admin: everyone).
  useEffect(() => {
    if (!rights.admin) return;
    void api
      .GET('/registry/users', { params: { query: { status: 'active', per_page: 1000 } } })
      .then((r) => setUsers(unwrap(r).users.map((u) => u.name)))
      .catch(() => setUsers([]));
  }, [rights.admin]);

  const changed = async (what: string) => {
    setNotice(what);
    setError(undefined);
    await Promise.all([load(), onChanged()]);
  };
  const remove = async (user: string) => {
    setRemoving(undefined);
    try {
      unwrap(await api.DELETE('/registry/groups/{name}/members/{user}', { params: { path: { name, user } } }));
      await changed(`${user} is no longer a member of ${name}.`);
    } catch (e) {
      setNotice(undefined);
      setError((e as Error).message);
    }
  };

  return (
    <Drawer opened onClose={onClose} position="right" size="xl" title={`Group ${name}`} closeButtonProps={{ 'aria-label': 'Close the group panel' }}>
      <Stack gap="md" data-testid="group-panel">
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
        {group && !editing && (
          <>
            {mayManage && (
              <Group gap="xs">
                {/* config.yaml owns such a group's fields (the server refuses changes); members may still be added. */}
                {group.managedBy === 'api' && (
                  <Button size="xs" variant="light" onClick={() => setEditing(true)}>
                    Edit
                  </Button>
                )}
                <Button size="xs" variant="light" onClick={() => setMemberForm({})}>
                  Add member
                </Button>
              </Group>
            )}
            <FieldTable
              striped
              rows={[
                [
                  'Properties',
                  group.properties.length ? (
                    <Group gap={4} key="p">
                      {group.properties.map((p) => (
                        <Badge key={p} variant="outline" color="gray">
                          {p}
                        </Badge>
                      ))}
                    </Group>
                  ) : (
                    'none'
                  ),
                ],
                ['Fair share', group.share === undefined ? 'default' : String(group.share)],
                ['Description', group.description ?? '—'],
                ['Managers', group.managers.join(', ') || '—'],
                ['Managed by', group.managedBy === 'config' ? 'config.yaml' : 'the API'],
              ]}
            />
          </>
        )}
        {group && editing && (
          <GroupEditor
            group={group}
            admin={rights.admin}
            onCancel={() => setEditing(false)}
            onSaved={() => {
              setEditing(false);
              void changed(`${name} is saved.`);
            }}
          />
        )}
        {group && (
          <>
            <Title order={3} size="h5">
              Members
            </Title>
            {group.members === undefined ? (
              <Text size="sm">Only Admin and the group's managers see its members.</Text>
            ) : group.members.length === 0 ? (
              <Text size="sm">No member.</Text>
            ) : (
              <Table striped data-testid="group-members">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>User</Table.Th>
                    <Table.Th>Role</Table.Th>
                    <Table.Th>Ends</Table.Th>
                    {mayManage && <Table.Th>Action</Table.Th>}
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {group.members.map((m) => (
                    <Table.Tr key={m.user} data-member={m.user}>
                      <Table.Td>{m.user}</Table.Td>
                      <Table.Td>{m.role}</Table.Td>
                      <Table.Td>{day(m.endsAt)}</Table.Td>
                      {mayManage && (
                        <Table.Td>
                          <Group gap={4} wrap="nowrap">
                            <Button size="compact-xs" variant="light" onClick={() => setMemberForm({ member: m })} aria-label={`Change ${m.user} in ${name}`}>
                              Change
                            </Button>
                            <Button size="compact-xs" variant="light" color="red" onClick={() => setRemoving(m.user)} aria-label={`Remove ${m.user} from ${name}`}>
                              Remove
                            </Button>
                          </Group>
                        </Table.Td>
                      )}
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
          </>
        )}
      </Stack>
      {memberForm && (
        <MemberForm
          group={name}
          admin={rights.admin}
          users={users}
          {...(memberForm.member ? { member: memberForm.member } : {})}
          onCancel={() => setMemberForm(undefined)}
          onDone={(user) => {
            setMemberForm(undefined);
            void changed(memberForm.member ? `${user} is changed in ${name}.` : `${user} is a member of ${name}.`);
          }}
        />
      )}
      {removing && (
        <ConfirmAction
          title={`Remove ${removing} from ${name}?`}
          effect={`${removing} loses the rights of ${name}: new tokens for this group are refused. Their jobs keep running.`}
          confirm={`Remove ${removing}`}
          onCancel={() => setRemoving(undefined)}
          onConfirm={() => void remove(removing)}
        />
      )}
    </Drawer>
  );
}
