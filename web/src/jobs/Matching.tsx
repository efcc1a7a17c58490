/**
 * Why a job waits (GET /jobs/{jid}/matching): for every site, partition and agent class, whether the job
 * could go there or what holds it back, naming the attribute; its owner's share; the summary sentence.
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Badge, Button, Group, List, Stack, Table, Text } from '@mantine/core';
import type { operations } from '@dirigo/client/schema';
import { api, unwrap } from '../api.ts';

type MatchingAnswer = operations['getJobMatching']['responses'][200]['content']['application/json'];

const KIND = { local: 'local site', slurm: 'Slurm partition', agents: 'agents' } as const;

const percent = (x: number) => `${(x * 100).toFixed(1)} %`;

/** The requirements that ask for something, as the manifest names them. */
function requirementsText(req: Record<string, unknown>): string {
  const n = (k: string) => (typeof req[k] === 'number' ? (req[k] as number) : 0);
  const list = (k: string) => (Array.isArray(req[k]) ? (req[k] as unknown[]).map(String) : []);
  const parts: string[] = [];
  const [min, max] = [n('minProcessors'), n('maxProcessors')];
  if (min > 1 || max > 1) parts.push(`NumberOfProcessors ${min === max ? min : `${min}–${max}`}`);
  if (n('maxRamMb') > 0) parts.push(`MaxRAM ${n('maxRamMb')} MB`);
  if (n('gpus') > 0) parts.push(`NumberOfGPUs ${n('gpus')}`);
  if (list('tags').length) parts.push(`Tags ${list('tags').join(', ')}`);
  if (list('platforms').length) parts.push(`Platform ${list('platforms').join(' or ')}`);
  if (n('cpuTime') > 0) parts.push(`CPUTime ${n('cpuTime')} s`);
  if (Array.isArray(req.sites)) parts.push(`Sites ${list('sites').join(', ')}`);
  if (list('bannedSites').length) parts.push(`BannedSites ${list('bannedSites').join(', ')}`);
  return parts.length ? parts.join(' · ') : 'nothing beyond one processor';
}

export function Matching({ jid }: { jid: number }) {
  const [answer, setAnswer] = useState<MatchingAnswer>();
  const [error, setError] = useState<string>();
  const load = useCallback(async () => {
    try {
      setAnswer(unwrap(await api.GET('/jobs/{jid}/matching', { params: { path: { jid } } })));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [jid]);
  useEffect(() => void load(), [load]);
  if (error)
    return (
      <Alert color="red" role="alert">
        {error}
      </Alert>
    );
  if (!answer) return <Text size="sm">Asking where the job could run…</Text>;
  const s = answer.share;
  return (
    <Stack gap="sm" data-testid="matching">
      <Alert color={answer.resources.some((r) => r.eligible) ? 'blue' : 'yellow'} role="status" data-testid="matching-summary">
        <Text size="sm">{answer.summary}</Text>
      </Alert>
      <Group gap="xs">
        <Text size="sm" fw={600}>
          Requirements:
        </Text>
        <Text size="sm" data-testid="matching-requirements">
          {requirementsText(answer.requirements)}
        </Text>
        {answer.TaskQueueID !== null && <Text size="sm">· task queue {answer.TaskQueueID}</Text>}
      </Group>
      <Table striped withTableBorder data-testid="matching-resources">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Where</Table.Th>
            <Table.Th scope="col">Eligible</Table.Th>
            <Table.Th scope="col">Held back by</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {answer.resources.map((r) => (
            <Table.Tr key={`${r.site}/${r.resource}`} data-site={r.site}>
              <Table.Th scope="row">
                {r.site}
                <Text size="xs" fw={400}>
                  {r.resource ? `${r.resource} · ` : ''}
                  {KIND[r.kind]}
                </Text>
              </Table.Th>
              <Table.Td>
                {/* As the statuses are shown: a coloured dot beside the word, which reads in either theme; never cut. */}
                <Badge color={r.eligible ? 'green' : 'red'} variant="dot" styles={{ label: { overflow: 'visible' } }}>
                  {r.eligible ? 'yes' : 'no'}
                </Badge>
              </Table.Td>
              <Table.Td>
                {r.holdBack.length === 0 ? (
                  <Text size="sm">—</Text>
                ) : (
                  <List size="sm" spacing={2}>
                    {r.holdBack.map((h, i) => (
                      <List.Item key={i}>
                        <Text span size="sm" fw={600}>
                          {h.attribute}
                        </Text>
                        <Text span size="sm">
                          {' '}
                          ({h.kind}): {h.reason}
                        </Text>
                      </List.Item>
                    ))}
                  </List>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {s && (
        <Text size="sm" data-testid="matching-share">
          Share: group {s.group} gets {percent(s.groupActual)} of recent work for a target of {percent(s.groupTarget)}; user {s.user} gets {percent(s.userActual)} of the group's for{' '}
          {percent(s.userTarget)}; {s.ahead} of the owner's jobs go first.
        </Text>
      )}
      <Group>
        <Button size="xs" variant="default" onClick={() => void load()}>
          Ask again
        </Button>
      </Group>
    </Stack>
  );
}
