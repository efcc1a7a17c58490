/**
 * Drain, stop and revoke change what running pilots do: they ask first, naming the pilots they will act
 * on. Cancel has the focus, so that Enter pressed by habit does nothing.
 */
import { useState } from 'react';
import { Button, Group, List, Modal, Stack, Text, Textarea } from '@mantine/core';

export type PilotAction = 'drain' | 'stop' | 'revoke';

/** Pilots named one by one; the rest are counted. */
const NAMED = 10;

const WHAT: Record<PilotAction, { verb: string; effect: string }> = {
  drain: { verb: 'Drain', effect: 'Each finishes the jobs it runs, takes no new one, then ends.' },
  stop: { verb: 'Stop', effect: 'Each gives its jobs back (they wait to run again) and ends.' },
  revoke: { verb: 'Revoke', effect: 'Each is Aborted at once: its tokens stop working, its jobs are rescheduled and its batch job is cancelled. This cannot be undone.' },
};

export interface PilotRef {
  PilotID: number;
  Site: string;
  State: string;
}

export function ConfirmPilots({ action, pilots, onConfirm, onCancel }: { action: PilotAction; pilots: readonly PilotRef[]; onConfirm(reason: string | undefined): void; onCancel(): void }) {
  const { verb, effect } = WHAT[action];
  const [reason, setReason] = useState('');
  const which = pilots.length === 1 ? `pilot ${pilots[0]!.PilotID}` : `${pilots.length} pilots`;
  return (
    <Modal opened onClose={onCancel} title={`${verb} ${which}?`} centered closeButtonProps={{ 'aria-label': 'Close, doing nothing' }}>
      <Stack gap="sm">
        <Text size="sm">{effect}</Text>
        <List size="sm" data-testid="confirm-pilots">
          {pilots.slice(0, NAMED).map((p) => (
            <List.Item key={p.PilotID}>
              Pilot {p.PilotID} · {p.Site} ({p.State})
            </List.Item>
          ))}
        </List>
        {pilots.length > NAMED && <Text size="sm">and {pilots.length - NAMED} more.</Text>}
        <Textarea label="Reason (optional)" description="Shown with the pilots, for whoever looks at them later" autosize minRows={1} maxLength={500} value={reason} onChange={(e) => setReason(e.currentTarget.value)} />
        <Group justify="flex-end" gap="xs">
          <Button variant="default" onClick={onCancel} data-autofocus>
            Cancel
          </Button>
          <Button color={action === 'revoke' ? 'red' : 'blue'} onClick={() => onConfirm(reason.trim() ? reason : undefined)}>
            {verb} {which}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
