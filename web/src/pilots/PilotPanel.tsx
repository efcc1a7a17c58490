/**
 * One pilot: its fields, the jobs it took (each a link to the job in the job monitor) with their status
 * now, and its batch output, or why there is none to show (the server's words: a pilot started by hand,
 * output not read yet, not allowed). Drain, Stop and Revoke for those who may, while it has not ended.
 */
import { useEffect, useState } from 'react';
import { Alert, Anchor, Button, Code, Drawer, Group, ScrollArea, Stack, Table, Text, Title } from '@mantine/core';
import type { operations } from '@dirigo/client/schema';
import { FieldTable } from '../FieldTable.tsx';
import { api, authorizedFetch, unwrap } from '../api.ts';
import { formatTimestamp } from '../time-format.ts';
import { basePath, navigate } from '../url-state.ts';
import type { PilotAction } from './ConfirmPilots.tsx';
import { isEnded, StateBadge } from './pilot-state.tsx';

type PilotDetail = operations['getPilot']['responses'][200]['content']['application/json'];

const when = (iso: string | null) => (iso ? formatTimestamp(iso) : '—');
const amount = (v: number | null, unit = '') => (v === null ? '—' : `${v}${unit}`);

function Log({ pilotId, version }: { pilotId: number; version: unknown }) {
  const [text, setText] = useState<{ ok: boolean; body: string }>();
  useEffect(() => {
    void authorizedFetch(new Request(`/pilots/${pilotId}/logs`))
      .then(async (res) => {
        const body = await res.text();
        if (res.ok) setText({ ok: true, body });
        else setText({ ok: false, body: ((JSON.parse(body) as { error_description?: string }).error_description ?? `the server answered ${res.status}`) });
      })
      .catch((e: Error) => setText({ ok: false, body: e.message }));
  }, [pilotId, version]);
  if (!text) return <Text size="sm">Loading…</Text>;
  if (!text.ok)
    return (
      <Alert color="gray" role="status" data-testid="pilot-log-missing">
        {text.body}
      </Alert>
    );
  return (
    <ScrollArea.Autosize mah={400}>
      <Code block data-testid="pilot-log">
        {text.body}
      </Code>
    </ScrollArea.Autosize>
  );
}

export function PilotPanel({ pilotId, mayManage, onClose, onAction, version }: { pilotId: number; mayManage: boolean; onClose(): void; onAction(action: PilotAction, pilot: PilotDetail): void; version: unknown }) {
  const [pilot, setPilot] = useState<PilotDetail>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    void api
      .GET('/pilots/{pid}', { params: { path: { pid: pilotId } } })
      .then((r) => {
        setPilot(unwrap(r));
        setError(undefined);
      })
      .catch((e: Error) => setError(e.message));
  }, [pilotId, version]);

  return (
    <Drawer opened onClose={onClose} position="right" size="xl" title={`Pilot ${pilotId}`} closeButtonProps={{ 'aria-label': 'Close the pilot panel' }}>
      <Stack gap="md" data-testid="pilot-panel">
        {error && (
          <Alert color="red" role="alert">
            {error}
          </Alert>
        )}
        {pilot && (
          <>
            {mayManage && !isEnded(pilot.State) && (
              <Group gap="xs">
                {(['drain', 'stop', 'revoke'] as const).map((action) => (
                  <Button key={action} size="xs" variant="light" color={action === 'revoke' ? 'red' : 'blue'} onClick={() => onAction(action, pilot)}>
                    {action[0]!.toUpperCase() + action.slice(1)}
                  </Button>
                ))}
              </Group>
            )}
            <FieldTable
              striped
              rows={[
                ['State', <StateBadge key="s" state={pilot.State} />],
                ['Reason', pilot.Reason || '—'],
                ['Site', pilot.Resource ? `${pilot.Site} / ${pilot.Resource}` : pilot.Site],
                ['Origin', pilot.Origin],
                ['Batch reference', pilot.BatchReference ?? '—'],
                ['Owner', pilot.Owner],
                ['Agent', pilot.AgentID ?? '—'],
                ['Command', pilot.Command ?? '—'],
                ['Revoked by', pilot.RevokedBy ?? '—'],
                ['Resources', `${amount(pilot.Slots)} slots, ${amount(pilot.Cores)} cores, ${amount(pilot.MemoryMB, ' MB')}, ${amount(pilot.GPUs)} GPUs, ${amount(pilot.CPUTime, ' s')}`],
                ['Submitted', when(pilot.SubmittedAt)],
                ['Started', when(pilot.StartedAt)],
                ['Last seen', when(pilot.LastSeen)],
                ['Ended', when(pilot.EndedAt)],
              ]}
            />
            <Title order={3} size="h5">
              Jobs ({pilot.Jobs.length})
            </Title>
            {pilot.Jobs.length === 0 ? (
              <Text size="sm">It took no job.</Text>
            ) : (
              <Table striped data-testid="pilot-jobs">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Job</Table.Th>
                    <Table.Th>Taken</Table.Th>
                    <Table.Th>Status now</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {pilot.Jobs.map((j) => (
                    <Table.Tr key={j.JobID}>
                      <Table.Td>
                        <Anchor
                          href={`${basePath()}?job=${j.JobID}`}
                          onClick={(e) => {
                            e.preventDefault();
                            navigate('', { job: String(j.JobID) });
                          }}
                        >
                          Job {j.JobID}
                        </Anchor>
                      </Table.Td>
                      <Table.Td style={{ whiteSpace: 'nowrap' }}>{when(j.TakenAt)}</Table.Td>
                      <Table.Td>{j.Status ?? 'no longer exists'}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
            <Title order={3} size="h5">
              Output
            </Title>
            {/* An ended pilot's output no longer changes: read again only while it runs. */}
            <Log pilotId={pilotId} version={isEnded(pilot.State) ? pilot.State : version} />
          </>
        )}
      </Stack>
    </Drawer>
  );
}
