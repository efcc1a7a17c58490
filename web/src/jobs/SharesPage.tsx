/**
 * Fair share (GET /jobs/shares): each group's share, target and actual fraction of recent work, and its
 * users', with their Waiting and running jobs.
 */
import { Fragment, useCallback, useEffect, useState } from 'react';
import { Alert, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import type { operations } from '@dirigo/client/schema';
import { api, unwrap } from '../api.ts';

type SharesAnswer = operations['getJobShares']['responses'][200]['content']['application/json'];

const percent = (x: number) => `${(x * 100).toFixed(1)} %`;

/** A half-life as people say it. */
function duration(seconds: number): string {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

export function SharesPage() {
  const [answer, setAnswer] = useState<SharesAnswer>();
  const [error, setError] = useState<string>();
  const load = useCallback(async () => {
    try {
      setAnswer(unwrap(await api.GET('/jobs/shares')));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, []);
  useEffect(() => void load(), [load]);
  return (
    <Stack gap="md">
      <Title order={1} size="h2">
        Fair share
      </Title>
      {error && (
        <Alert color="red" role="alert">
          {error}
        </Alert>
      )}
      {answer && (
        <Text size="sm">
          Each group gets slots in proportion to its share, and its users equally; target and actual are fractions of recent work (a user&apos;s, of its group&apos;s). Past usage counts half after{' '}
          {duration(answer.halfLifeSeconds)}.
        </Text>
      )}
      {answer && answer.groups.length === 0 && <Text size="sm">No group has Waiting or recent work.</Text>}
      {answer && answer.groups.length > 0 && (
        <Table.ScrollContainer minWidth={640}>
          <Table striped withTableBorder data-testid="shares">
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">Group / user</Table.Th>
                <Table.Th scope="col">Share</Table.Th>
                <Table.Th scope="col">Target</Table.Th>
                <Table.Th scope="col">Actual</Table.Th>
                <Table.Th scope="col">Waiting</Table.Th>
                <Table.Th scope="col">Running</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {answer.groups.map((g) => (
                <Fragment key={g.group}>
                  <Table.Tr data-group={g.group}>
                    <Table.Th scope="row">{g.group}</Table.Th>
                    <Table.Td>{g.share}</Table.Td>
                    <Table.Td>{percent(g.target)}</Table.Td>
                    <Table.Td>{percent(g.actual)}</Table.Td>
                    <Table.Td>{g.waiting}</Table.Td>
                    <Table.Td>{g.running}</Table.Td>
                  </Table.Tr>
                  {g.users.map((u) => (
                    <Table.Tr key={`${g.group}/${u.user}`} data-user={u.user}>
                      <Table.Td pl="xl">{u.user}</Table.Td>
                      <Table.Td>{u.share}</Table.Td>
                      <Table.Td>{percent(u.target)}</Table.Td>
                      <Table.Td>{percent(u.actual)}</Table.Td>
                      <Table.Td>{u.waiting}</Table.Td>
                      <Table.Td>{u.running}</Table.Td>
                    </Table.Tr>
                  ))}
                </Fragment>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Group>
        <Button size="xs" variant="default" onClick={() => void load()}>
          Refresh
        </Button>
      </Group>
    </Stack>
  );
}
