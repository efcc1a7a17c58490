/**
 * Asks before a registry change that takes access away (suspend, remove a user, end a membership),
 * saying what it does; with `reason`, asks for one (shown to the user when they are refused). Cancel has
 * the focus, so that Enter pressed by habit does nothing.
 */
import { useState } from 'react';
import { Button, Group, Modal, Stack, Text, Textarea } from '@mantine/core';

export interface ConfirmProps {
  title: string;
  effect: string;
  confirm: string;
  /** Ask for a reason; `required` refuses an empty one. */
  reason?: { label: string; required?: boolean };
  onConfirm(reason: string | undefined): void;
  onCancel(): void;
}

export function ConfirmAction({ title, effect, confirm, reason, onConfirm, onCancel }: ConfirmProps) {
  const [text, setText] = useState('');
  const missing = reason?.required === true && text.trim() === '';
  return (
    <Modal opened onClose={onCancel} title={title} centered closeButtonProps={{ 'aria-label': 'Close, doing nothing' }}>
      <Stack gap="sm">
        <Text size="sm">{effect}</Text>
        {reason && <Textarea label={reason.label} required={reason.required} autosize minRows={1} maxLength={512} value={text} onChange={(e) => setText(e.currentTarget.value)} />}
        <Group justify="flex-end" gap="xs">
          <Button variant="default" onClick={onCancel} data-autofocus>
            Cancel
          </Button>
          <Button color="red" disabled={missing} onClick={() => onConfirm(text.trim() || undefined)}>
            {confirm}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
