/**
 * The registry audit log (Admin): newest first, filtered by target, actor and action in the address,
 * each change shown as the fields it changed, before and after.
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Button, Group, Stack, Table, Text, TextInput } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { formatTimestamp } from '../time-format.ts';
import { updateParams } from '../url-state.ts';
import { auditDiff } from './audit-diff.ts';
import type { AuditEntry } from './types.ts';

const PER_PAGE = 50;

function Diff({ entry }: { entry: AuditEntry }) {
  const rows = auditDiff(entry.before, entry.after);
  if (rows.length === 0) return <Text size="sm">no field changed</Text>;
  return (
    <Table withRowBorders={false} verticalSpacing={2} horizontalSpacing={6} data-testid="audit-diff">
      <Table.Tbody>
        {rows.map((r) => (
          <Table.Tr key={r.field}>
            <Table.Th scope="row" fw={600} style={{ whiteSpace: 'nowrap' }}>
              {r.field}
            </Table.Th>
            <Table.Td>
              {r.before === undefined ? (
                <span className="diff-added">{r.after}</span>
              ) : r.after === undefined ? (
                <del className="diff-removed">{r.before}</del>
              ) : (
                <>
                  <del className="diff-removed">{r.before}</del> → <ins className="diff-added">{r.after}</ins>
                </>
              )}
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

export function AuditTab({ params }: { params: URLSearchParams }) {
  const target = params.get('target') ?? '';
  const actor = params.get('actor') ?? '';
  const action = params.get('action') ?? '';
  const page = Math.max(1, Number(params.get('page') ?? 1) || 1);
  const [list, setList] = useState<{ entries: AuditEntry[]; total: number }>();
  const [error, setError] = useState<string>();
  const load = useCallback(async () => {
    try {
      const query = { ...(target ? { target } : {}), ...(actor ? { actor } : {}), ...(action ? { action } : {}), page, per_page: PER_PAGE };
      setList(unwrap(await api.GET('/registry/audit', { params: { query } })));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [target, actor, action, page]);
  useEffect(() => void load(), [load]);
  const pages = list ? Math.max(1, Math.ceil(list.total / PER_PAGE)) : 1;
  return (
    <Stack gap="md">
      {error && (
        <Alert color="red" role="alert">
          {error}
        </Alert>
      )}
      <Group gap="sm" align="flex-end">
        <TextInput label="Target" description="a user, group, or group/user" placeholder="any" value={target} onChange={(e) => updateParams({ target: e.currentTarget.value, page: undefined })} w={220} />
        <TextInput label="Actor" description="user:<name>, cli:<name>, config" placeholder="any" value={actor} onChange={(e) => updateParams({ actor: e.currentTarget.value, page: undefined })} w={220} />
        <TextInput label="Action" description="e.g. user.suspend" placeholder="any" value={action} onChange={(e) => updateParams({ action: e.currentTarget.value, page: undefined })} w={200} />
      </Group>
      {list && (
        <Text size="sm" data-testid="audit-count">
          {list.total === 0 ? 'No change matches.' : `Changes ${(page - 1) * PER_PAGE + 1}–${(page - 1) * PER_PAGE + list.entries.length} of ${list.total}, newest first.`}
        </Text>
      )}
      <Table.ScrollContainer minWidth={900}>
        <Table striped data-testid="registry-audit" verticalSpacing="xs">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>When</Table.Th>
              <Table.Th>Actor</Table.Th>
              <Table.Th>Action</Table.Th>
              <Table.Th>Target</Table.Th>
              <Table.Th>Change</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list?.entries.map((e) => (
              <Table.Tr key={e.id} data-action={e.action} data-target={e.target}>
                <Table.Td style={{ whiteSpace: 'nowrap', verticalAlign: 'top' }}>{formatTimestamp(e.at)}</Table.Td>
                <Table.Td style={{ verticalAlign: 'top' }}>{e.actor}</Table.Td>
                <Table.Td style={{ verticalAlign: 'top' }}>{e.action}</Table.Td>
                <Table.Td style={{ verticalAlign: 'top' }}>
                  {e.targetType} {e.target}
                </Table.Td>
                <Table.Td>
                  <Diff entry={e} />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {pages > 1 && (
        <Group gap="xs">
          <Button variant="default" size="xs" disabled={page <= 1} onClick={() => updateParams({ page: page > 2 ? String(page - 1) : undefined })}>
            Newer
          </Button>
          <Text size="sm">
            Page {page} of {pages}
          </Text>
          <Button variant="default" size="xs" disabled={page >= pages} onClick={() => updateParams({ page: String(page + 1) })}>
            Older
          </Button>
        </Group>
      )}
    </Stack>
  );
}
