/**
 * Ban or unban a site or one of its resources: asks for the reason (required to ban, so that whoever reads
 * the status later knows why) and, to ban one resource only, its name. The server's refusal is shown as it
 * says it (a 403 for a group without SiteManager or JobAdministrator).
 */
import { useState } from 'react';
import { Alert, Button, Group, Modal, Select, Stack, Textarea, TextInput } from '@mantine/core';
import { api, unwrap } from '../api.ts';

export interface StatusDialogProps {
  action: 'ban' | 'unban';
  site: string;
  /** What may be unbanned: '' for the site itself, then its banned resources. */
  banned: string[];
  onDone(): void;
  onCancel(): void;
}

export function StatusDialog({ action, site, banned, onDone, onCancel }: StatusDialogProps) {
  const [reason, setReason] = useState('');
  const [resource, setResource] = useState(action === 'unban' ? (banned[0] ?? '') : '');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const verb = action === 'ban' ? 'Ban' : 'Unban';
  const missingReason = action === 'ban' && reason.trim() === '';

  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const params = { path: { site } };
      const target = resource ? { resource } : {};
      if (action === 'ban') unwrap(await api.POST('/sites/{site}/ban', { params, body: { reason, ...target } }));
      else unwrap(await api.POST('/sites/{site}/unban', { params, body: { ...(reason.trim() ? { reason } : {}), ...target } }));
      onDone();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal opened onClose={onCancel} title={`${verb} ${site}`} centered closeButtonProps={{ 'aria-label': 'Close, doing nothing' }}>
      <Stack gap="sm">
        {action === 'ban' ? (
          <TextInput
            label="Resource (optional)"
            description="One resource only (a Slurm partition, an agents resource name); empty for the whole site"
            value={resource}
            onChange={(e) => setResource(e.currentTarget.value.trim())}
          />
        ) : (
          banned.length > 1 && (
            <Select label="What to unban" data={banned.map((r) => ({ value: r, label: r ? `resource ${r}` : 'the whole site' }))} value={resource} allowDeselect={false} onChange={(v) => setResource(v ?? '')} />
          )
        )}
        <Textarea
          label={action === 'ban' ? 'Reason' : 'Reason (optional)'}
          required={action === 'ban'}
          autosize
          minRows={2}
          maxLength={1000}
          value={reason}
          onChange={(e) => setReason(e.currentTarget.value)}
          data-autofocus
        />
        {error && (
          <Alert color="red" role="alert">
            {error}
          </Alert>
        )}
        <Group justify="flex-end" gap="xs">
          <Button variant="default" onClick={onCancel}>
            Cancel
          </Button>
          <Button color={action === 'ban' ? 'red' : 'blue'} disabled={missingReason} loading={busy} onClick={() => void submit()}>
            {verb} {resource ? `${site}/${resource}` : site}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
