/** Groups: every group with its properties, share and members; a group's panel opens from the list (`?group=`). Add group for Admin. */
import { useState } from 'react';
import { Alert, Button, Group, Modal, Stack, Table, Textarea, TextInput } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { updateParams } from '../url-state.ts';
import { GroupPanel } from './GroupPanel.tsx';
import type { RegistryRights } from './rights.ts';

function NewGroup({ onDone, onCancel }: { onDone(name: string): void; onCancel(): void }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<string>();
  const save = async () => {
    try {
      const created = unwrap(await api.POST('/registry/groups', { body: { name: name.trim(), ...(description.trim() ? { description: description.trim() } : {}) } }));
      onDone(created.name);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <Modal opened onClose={onCancel} title="Add a group" centered closeButtonProps={{ 'aria-label': 'Close, saving nothing' }}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <Stack gap="sm">
          {error && (
            <Alert color="red" role="alert">
              {error}
            </Alert>
          )}
          <TextInput label="Group name" description="1–64 of A–Z a–z 0–9 _ . -" required maxLength={64} value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
          <Textarea label="Description" autosize minRows={1} maxLength={512} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
          <Group justify="flex-end" gap="xs">
            <Button variant="default" onClick={onCancel}>
              Cancel
            </Button>
            <Button type="submit" disabled={!name.trim()}>
              Add group
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

export function GroupsTab({ params, rights }: { params: URLSearchParams; rights: RegistryRights }) {
  const selected = params.get('group') ?? undefined;
  const [adding, setAdding] = useState(false);
  return (
    <Stack gap="md">
      {rights.admin && (
        <Group>
          <Button onClick={() => setAdding(true)}>Add group</Button>
        </Group>
      )}
      <Table.ScrollContainer minWidth={700}>
        <Table striped highlightOnHover data-testid="registry-groups">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Group</Table.Th>
              <Table.Th>Properties</Table.Th>
              <Table.Th>Share</Table.Th>
              <Table.Th>Members</Table.Th>
              <Table.Th>Managers</Table.Th>
              <Table.Th>Description</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rights.groups.map((g) => (
              <Table.Tr key={g.name} data-group={g.name}>
                <Table.Td>
                  <Button size="compact-sm" variant="subtle" onClick={() => updateParams({ group: g.name }, false)} aria-label={`Open group ${g.name}`}>
                    {g.name}
                  </Button>
                </Table.Td>
                <Table.Td>{g.properties.join(', ') || '—'}</Table.Td>
                <Table.Td>{g.share ?? 'default'}</Table.Td>
                <Table.Td>{g.members?.length ?? '—'}</Table.Td>
                <Table.Td>{g.managers.join(', ') || '—'}</Table.Td>
                <Table.Td>{g.description ?? '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {selected && <GroupPanel name={selected} rights={rights} onClose={() => updateParams({ group: undefined }, false)} onChanged={rights.reload} />}
      {adding && (
        <NewGroup
          onCancel={() => setAdding(false)}
          onDone={(name) => {
            setAdding(false);
            void rights.reload();
            updateParams({ group: name }, false);
          }}
        />
      )}
    </Stack>
  );
}
