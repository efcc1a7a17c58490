/**
 * Requests: those waiting for the viewer's decision (Admin: all; a manager: their groups'), with Approve
 * and Reject (a reason, optional); the viewer's own groups, a form to request another group, and their
 * own requests, which they may withdraw while pending.
 */
import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { Alert, Badge, Button, Group, Select, Stack, Table, Text, Textarea, Title } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { formatTimestamp } from '../time-format.ts';
import { ConfirmAction } from './ConfirmAction.tsx';
import { approveRequest, listRequests, rejectRequest, requestGroup, withdrawRequest, type JoinRequest } from './join-api.ts';
import type { RegistryRights } from './rights.ts';

const STATUS_COLOURS: Record<string, string> = { pending: 'yellow', approved: 'green', rejected: 'red', withdrawn: 'gray' };

function RequestTable({ rows, testId, actions }: { rows: JoinRequest[]; testId: string; actions(r: JoinRequest): ReactNode }) {
  return (
    <Table.ScrollContainer minWidth={800}>
      <Table striped data-testid={testId}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Request</Table.Th>
            <Table.Th>Who</Table.Th>
            <Table.Th>Group</Table.Th>
            <Table.Th>Message</Table.Th>
            <Table.Th>Asked</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Action</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((r) => (
            <Table.Tr key={r.id} data-request={r.id} data-status={r.status}>
              <Table.Td>
                #{r.id} {r.kind === 'registration' ? 'registration' : 'group'}
              </Table.Td>
              <Table.Td>
                {r.user}
                {r.email ? ` <${r.email}>` : ''}
              </Table.Td>
              <Table.Td>{r.group}</Table.Td>
              <Table.Td>{r.message ?? '—'}</Table.Td>
              <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatTimestamp(r.createdAt)}</Table.Td>
              <Table.Td>
                <Badge color={STATUS_COLOURS[r.status] ?? 'gray'} variant="dot" styles={{ root: { minWidth: 'max-content' } }}>
                  {r.status}
                </Badge>
                {r.reason ? <Text size="xs">{r.reason}</Text> : null}
              </Table.Td>
              <Table.Td>{actions(r)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

export function RequestsTab({ rights }: { rights: RegistryRights }) {
  const [requests, setRequests] = useState<JoinRequest[]>();
  const [myGroups, setMyGroups] = useState<string[]>([]);
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [rejecting, setRejecting] = useState<JoinRequest>();
  const [wanted, setWanted] = useState<string | null>(null);
  const [message, setMessage] = useState('');
  const me = rights.username;

  const load = useCallback(async () => {
    try {
      const [list, account] = await Promise.all([listRequests(), api.GET('/oauth2/account')]);
      setRequests(list);
      setMyGroups(unwrap(account).groups.map((g) => g.name));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, []);
  useEffect(() => void load(), [load]);

  const act = async (what: string, call: () => Promise<unknown>) => {
    setRejecting(undefined);
    try {
      await call();
      setNotice(what);
      setError(undefined);
      await Promise.all([load(), rights.reload()]);
    } catch (e) {
      setNotice(undefined);
      setError((e as Error).message);
    }
  };

  const mayDecide = (r: JoinRequest) => r.status === 'pending' && (rights.admin || rights.manages.includes(r.group));
  const toDecide = (requests ?? []).filter((r) => mayDecide(r) && r.user !== me);
  const mine = (requests ?? []).filter((r) => r.user === me);
  const pendingGroups = new Set(mine.filter((r) => r.status === 'pending').map((r) => r.group));
  const requestable = rights.groups.map((g) => g.name).filter((g) => !myGroups.includes(g) && !pendingGroups.has(g));

  return (
    <Stack gap="lg">
      {error && (
        <Alert color="red" role="alert">
          {error}
        </Alert>
      )}
      {notice && (
        <Alert color="blue" role="status" withCloseButton onClose={() => setNotice(undefined)} closeButtonLabel="Dismiss">
          {notice}
        </Alert>
      )}
      {(rights.admin || rights.manages.length > 0) && (
        <Stack gap="xs">
          <Title order={2} size="h4">
            Waiting for my decision
          </Title>
          {requests && toDecide.length === 0 ? (
            <Text size="sm">No request waits for you.</Text>
          ) : (
            <RequestTable
              rows={toDecide}
              testId="requests-to-decide"
              actions={(r) => (
                <Group gap={4} wrap="nowrap">
                  <Button size="compact-xs" variant="light" onClick={() => void act(`Request #${r.id} is approved: ${r.user} is a member of ${r.group}.`, () => approveRequest(r.id))} aria-label={`Approve request ${r.id} of ${r.user} for ${r.group}`}>
                    Approve
                  </Button>
                  <Button size="compact-xs" variant="light" color="red" onClick={() => setRejecting(r)} aria-label={`Reject request ${r.id} of ${r.user} for ${r.group}`}>
                    Reject
                  </Button>
                </Group>
              )}
            />
          )}
        </Stack>
      )}
      <Stack gap="xs">
        <Title order={2} size="h4">
          My groups
        </Title>
        <Group gap={6} data-testid="my-groups">
          {myGroups.map((g) => (
            <Badge key={g} variant="outline" color="gray">
              {g}
              {rights.manages.includes(g) ? ' · manager' : ''}
            </Badge>
          ))}
        </Group>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (!wanted) return;
            void act(`You asked to join ${wanted}; its managers decide.`, () => requestGroup(wanted, message.trim() || undefined)).then(() => {
              setWanted(null);
              setMessage('');
            });
          }}
        >
          <Group gap="sm" align="flex-end">
            <Select label="Request a group" placeholder={requestable.length ? 'choose a group' : 'no other group'} data={requestable} value={wanted} onChange={setWanted} w={220} comboboxProps={{ withinPortal: true }} />
            <Textarea label="Message to its managers (optional)" autosize minRows={1} maxLength={1024} value={message} onChange={(e) => setMessage(e.currentTarget.value)} w={320} />
            <Button type="submit" disabled={!wanted}>
              Request
            </Button>
          </Group>
        </form>
      </Stack>
      <Stack gap="xs">
        <Title order={2} size="h4">
          My requests
        </Title>
        {requests && mine.length === 0 ? (
          <Text size="sm">You have made no request.</Text>
        ) : (
          <RequestTable
            rows={mine}
            testId="my-requests"
            actions={(r) =>
              r.status === 'pending' ? (
                <Button size="compact-xs" variant="light" color="gray" onClick={() => void act(`Request #${r.id} is withdrawn.`, () => withdrawRequest(r.id))} aria-label={`Withdraw request ${r.id} for ${r.group}`}>
                  Withdraw
                </Button>
              ) : (
                '—'
              )
            }
          />
        )}
      </Stack>
      {rejecting && (
        <ConfirmAction
          title={`Reject request #${rejecting.id}?`}
          effect={`${rejecting.user} does not join ${rejecting.group}. They see the reason.`}
          confirm="Reject"
          reason={{ label: 'Reason (optional)' }}
          onCancel={() => setRejecting(undefined)}
          onConfirm={(reason) => void act(`Request #${rejecting.id} is rejected.`, () => rejectRequest(rejecting.id, reason))}
        />
      )}
    </Stack>
  );
}
