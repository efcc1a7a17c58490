/**
 * Who I am (name, DNs, every group with its properties, the token's group and setup), the grants that
 * applications hold for me and my browser sign-ins, each with a way to end it.
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import type { operations } from '@dirigo/client/schema';
import { api, unwrap } from '../api.ts';
import { FieldTable } from '../FieldTable.tsx';
import { AupSection } from './AupSection.tsx';
import { formatTimestamp } from '../time-format.ts';

type Account = operations['getAccount']['responses'][200]['content']['application/json'];
type Grant = operations['listMyGrants']['responses'][200]['content']['application/json']['grants'][number];
type Session = operations['listMySessions']['responses'][200]['content']['application/json']['sessions'][number];

const when = (iso: string | null | undefined) => (iso ? formatTimestamp(iso) : '—');

function useList<T>(load: () => Promise<T[]>): { rows: T[] | undefined; error: string | undefined; reload(): Promise<void> } {
  const [rows, setRows] = useState<T[]>();
  const [error, setError] = useState<string>();
  const reload = useCallback(async () => {
    try {
      setRows(await load());
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [load]);
  useEffect(() => void reload(), [reload]);
  return { rows, error, reload };
}

const loadGrants = async () => unwrap(await api.GET('/oauth2/account/grants')).grants;
const loadSessions = async () => unwrap(await api.GET('/oauth2/account/sessions')).sessions;

export function AccountPage() {
  const [me, setMe] = useState<Account>();
  const [error, setError] = useState<string>();
  const grants = useList<Grant>(loadGrants);
  const sessions = useList<Session>(loadSessions);
  useEffect(() => {
    void api
      .GET('/oauth2/account')
      .then((r) => setMe(unwrap(r)))
      .catch((e: Error) => setError(e.message));
  }, []);
  const revoke = async (grantId: string) => {
    await api.DELETE('/oauth2/account/grants/{grantId}', { params: { path: { grantId } } });
    await grants.reload();
  };
  const end = async (sessionId: string) => {
    await api.DELETE('/oauth2/account/sessions/{sessionId}', { params: { path: { sessionId } } });
    await sessions.reload();
  };
  const problem = error ?? grants.error ?? sessions.error;

  return (
    <Stack gap="lg">
      <Title order={1} size="h2">
        Account
      </Title>
      {problem && (
        <Alert color="red" role="alert">
          {problem}
        </Alert>
      )}
      {me && (
        <FieldTable
          maw={760}
          data-testid="whoami"
          rows={[
            ['User', me.username],
            ['Certificate DN', me.dns.join(', ') || '—'],
            ...(me.email ? [['Email', me.email] as [string, string]] : []),
            ['This token', `group ${me.group} · setup ${me.setup}`],
            [
              'Groups',
              <Stack gap={4} key="groups">
                {me.groups.map((g) => (
                  <Group key={g.name} gap={6}>
                    <Badge variant="outline" color={g.name === me.group ? 'blue' : 'gray'}>
                      {g.name}
                    </Badge>
                    <Text size="sm">{g.properties.join(', ') || 'no properties'}</Text>
                  </Group>
                ))}
              </Stack>,
            ],
          ]}
        />
      )}
      <AupSection />
      <Title order={2} size="h4">
        Applications holding my tokens
      </Title>
      <Table.ScrollContainer minWidth={700}>
        <Table striped data-testid="grants">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Application</Table.Th>
              <Table.Th>Group</Table.Th>
              <Table.Th>Scope</Table.Th>
              <Table.Th>Issued</Table.Th>
              <Table.Th>Expires</Table.Th>
              <Table.Th>Action</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {grants.rows?.map((g) => (
              <Table.Tr key={g.grant_id}>
                <Table.Td>
                  {g.client_name}
                  {g.current ? ' (this application)' : ''}
                </Table.Td>
                <Table.Td>
                  {g.group} · {g.setup}
                </Table.Td>
                <Table.Td>{g.scope || '—'}</Table.Td>
                <Table.Td>{when(g.issued_at)}</Table.Td>
                <Table.Td>{when(g.expires_at)}</Table.Td>
                <Table.Td>
                  <Button size="xs" color="red" variant="light" onClick={() => void revoke(g.grant_id)} aria-label={`Revoke the grant of ${g.client_name} in ${g.group}`}>
                    Revoke
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <Title order={2} size="h4">
        Browser sign-ins
      </Title>
      <Table.ScrollContainer minWidth={500}>
        <Table striped data-testid="sessions">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Method</Table.Th>
              <Table.Th>Signed in</Table.Th>
              <Table.Th>Expires</Table.Th>
              <Table.Th>Action</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {sessions.rows?.map((s) => (
              <Table.Tr key={s.session_id}>
                <Table.Td>{s.method}</Table.Td>
                <Table.Td>{when(s.signed_in_at)}</Table.Td>
                <Table.Td>{when(s.expires_at)}</Table.Td>
                <Table.Td>
                  <Button size="xs" color="red" variant="light" onClick={() => void end(s.session_id)} aria-label={`End the sign-in of ${when(s.signed_in_at)}`}>
                    End
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </Stack>
  );
}
