/**
 * Kill and delete cannot be undone: they ask first, naming the jobs they will act on. Cancel has the
 * focus, so that Enter pressed by habit does nothing irreversible.
 */
import { Button, Group, List, Modal, Stack, Text } from '@mantine/core';

export interface JobRef {
  jid: number;
  name?: string | null | undefined;
  status?: string | null | undefined;
}

/** Jobs named one by one; the rest are counted (a page may hold 1,000). */
const NAMED = 10;

/** What the action does, for one job and for several. */
const WHAT: Record<'kill' | 'delete', { verb: string; effect: [string, string] }> = {
  kill: {
    verb: 'Kill',
    effect: ['Its payload is stopped and it ends Killed. A killed job can be rescheduled.', 'Their payloads are stopped and they end Killed. A killed job can be rescheduled.'],
  },
  delete: { verb: 'Delete', effect: ['It is marked Deleted and leaves the job monitor.', 'They are marked Deleted and leave the job monitor.'] },
};

export interface ConfirmJobsProps {
  action: 'kill' | 'delete';
  jobs: readonly JobRef[];
  /** Selected jobs left out (finished ones, for kill), said so that the count is not a surprise. */
  leftOut?: number;
  onConfirm(): void;
  onCancel(): void;
}

export function ConfirmJobs({ action, jobs, leftOut = 0, onConfirm, onCancel }: ConfirmJobsProps) {
  const { verb, effect } = WHAT[action];
  const which = jobs.length === 1 ? `job ${jobs[0]!.jid}` : `${jobs.length} jobs`;
  return (
    <Modal opened onClose={onCancel} title={`${verb} ${which}?`} centered closeButtonProps={{ 'aria-label': 'Close, doing nothing' }}>
      <Stack gap="sm">
        <Text size="sm">{effect[jobs.length === 1 ? 0 : 1]}</Text>
        <List size="sm" data-testid="confirm-jobs">
          {jobs.slice(0, NAMED).map((j) => (
            <List.Item key={j.jid}>
              Job {j.jid}
              {j.name ? ` · ${j.name}` : ''}
              {j.status ? ` (${j.status})` : ''}
            </List.Item>
          ))}
        </List>
        {jobs.length > NAMED && <Text size="sm">and {jobs.length - NAMED} more.</Text>}
        {leftOut > 0 && (
          <Text size="sm">
            {leftOut} selected {leftOut === 1 ? 'job has' : 'jobs have'} finished and {leftOut === 1 ? 'is' : 'are'} left as {leftOut === 1 ? 'it is' : 'they are'}.
          </Text>
        )}
        <Group justify="flex-end" gap="xs">
          <Button variant="default" onClick={onCancel} data-autofocus>
            Cancel
          </Button>
          <Button color="red" onClick={onConfirm}>
            {verb} {which}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
