/** Add a member to a group, or change one's role or end date (Admin or the group's managers; making a manager: Admin). */
import { useState } from 'react';
import { Alert, Autocomplete, Button, Group, Modal, Select, Stack, TextInput } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { dateInput, endOfDay } from './dates.ts';

export interface MemberFormProps {
  group: string;
  /** Admin may make managers. */
  admin: boolean;
  /** Names offered while typing (those the viewer may see). */
  users: string[];
  /** An existing membership to change. */
  member?: { user: string; role: 'member' | 'manager'; endsAt?: string };
  onDone(user: string): void;
  onCancel(): void;
}

export function MemberForm({ group, admin, users, member, onDone, onCancel }: MemberFormProps) {
  const [user, setUser] = useState(member?.user ?? '');
  const [role, setRole] = useState<'member' | 'manager'>(member?.role ?? 'member');
  const [ends, setEnds] = useState(dateInput(member?.endsAt));
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const save = async () => {
    setBusy(true);
    try {
      // A manager sends no role: the server keeps 'member' for a new membership.
      const body = { ...(admin ? { role } : {}), endsAt: ends ? endOfDay(ends) : null };
      unwrap(await api.PUT('/registry/groups/{name}/members/{user}', { params: { path: { name: group, user: user.trim() } }, body }));
      onDone(user.trim());
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal opened onClose={onCancel} title={member ? `Change ${member.user} in ${group}` : `Add a member to ${group}`} centered closeButtonProps={{ 'aria-label': 'Close, saving nothing' }}>
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
          {!member && <Autocomplete label="User" required data={users} value={user} onChange={setUser} maxLength={64} data-autofocus comboboxProps={{ withinPortal: true }} />}
          {admin && (
            <Select
              label="Role"
              data={[
                { value: 'member', label: 'member' },
                { value: 'manager', label: 'manager (decides requests, manages members)' },
              ]}
              value={role}
              allowDeselect={false}
              onChange={(v) => v && setRole(v as 'member' | 'manager')}
              comboboxProps={{ withinPortal: true }}
            />
          )}
          <TextInput label="Ends on" description="UTC; empty: no end. A member until the end of that day." type="date" value={ends} onChange={(e) => setEnds(e.currentTarget.value)} w={220} />
          <Group justify="flex-end" gap="xs">
            <Button variant="default" onClick={onCancel}>
              Cancel
            </Button>
            <Button type="submit" loading={busy} disabled={!user.trim()}>
              {member ? 'Save' : 'Add member'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
