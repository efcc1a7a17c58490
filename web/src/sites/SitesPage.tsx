/**
 * Sites: every configured site with its status (Active, Banned), its banned resources, why, who and
 * since when, its resources as they last described themselves, and its history. Ban and Unban are
 * offered to groups with SiteManager or JobAdministrator; the server decides (its 403 is shown).
 */
import { useCallback, useEffect, useState } from 'react';
import { Alert, Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import type { operations } from '@dirigo/client/schema';
import { api, unwrap } from '../api.ts';
import { useMayManage } from '../account/may-manage.ts';
import { formatTimestamp } from '../time-format.ts';
import { StatusDialog } from './StatusDialog.tsx';

type Site = operations['listSites']['responses'][200]['content']['application/json']['sites'][number];
type Change = operations['getSiteHistory']['responses'][200]['content']['application/json']['history'][number];

function resourceText(site: Site): string {
  if (site.resources.length === 0) return '—';
  return site.resources.map((r) => `${r.resource || site.name}: ${r.cores} cores, ${r.memoryMb} MB${r.gpus ? `, ${r.gpus} GPUs` : ''}`).join('; ');
}

function History({ site }: { site: string }) {
  const [rows, setRows] = useState<Change[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    void api
      .GET('/sites/{site}/history', { params: { path: { site } } })
      .then((r) => setRows(unwrap(r).history))
      .catch((e: Error) => setError(e.message));
  }, [site]);
  if (error) return <Alert color="red">{error}</Alert>;
  if (rows?.length === 0) return <Text size="sm">{site} has never been banned.</Text>;
  return (
    <Table.ScrollContainer minWidth={600}>
      <Table striped data-testid="site-history">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>When</Table.Th>
            <Table.Th>Resource</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>By</Table.Th>
            <Table.Th>Reason</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows?.map((h, i) => (
            <Table.Tr key={i}>
              <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatTimestamp(h.at)}</Table.Td>
              <Table.Td>{h.resource || 'whole site'}</Table.Td>
              <Table.Td>{h.status}</Table.Td>
              <Table.Td>{h.by}</Table.Td>
              <Table.Td>{h.reason || '—'}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

export function SitesPage() {
  const [sites, setSites] = useState<Site[]>();
  const [error, setError] = useState<string>();
  const [dialog, setDialog] = useState<{ action: 'ban' | 'unban'; site: Site }>();
  const [shown, setShown] = useState<string>();
  // Bumped after a change, so that the history shown is read again.
  const [version, setVersion] = useState(0);
  const mayManage = useMayManage();
  const reload = useCallback(async () => {
    try {
      setSites(unwrap(await api.GET('/sites')).sites);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, []);
  useEffect(() => void reload(), [reload]);

  return (
    <Stack gap="lg">
      <Title order={1} size="h2">
        Sites
      </Title>
      {error && (
        <Alert color="red" role="alert">
          {error}
        </Alert>
      )}
      <Table.ScrollContainer minWidth={900}>
        <Table striped data-testid="sites">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Site</Table.Th>
              <Table.Th>Type</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Banned resources</Table.Th>
              <Table.Th>Reason</Table.Th>
              <Table.Th>By</Table.Th>
              <Table.Th>Since</Table.Th>
              <Table.Th>Resources</Table.Th>
              <Table.Th>Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {sites?.map((s) => {
              const first = s.ban ?? s.bannedResources[0];
              const banned = [...(s.ban ? [''] : []), ...s.bannedResources.map((r) => r.resource)];
              return (
                <Table.Tr key={s.name} data-site={s.name} data-status={s.status}>
                  <Table.Td fw={600}>{s.name}</Table.Td>
                  <Table.Td>{s.type}</Table.Td>
                  <Table.Td>
                    <Badge color={s.status === 'Banned' ? 'red' : 'green'} variant="dot" styles={{ root: { minWidth: 'max-content' } }}>
                      {s.status}
                    </Badge>
                  </Table.Td>
                  <Table.Td>{s.bannedResources.map((r) => r.resource).join(', ') || '—'}</Table.Td>
                  <Table.Td>{first?.reason ?? '—'}</Table.Td>
                  <Table.Td>{first?.by ?? '—'}</Table.Td>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>{first ? formatTimestamp(first.since) : '—'}</Table.Td>
                  <Table.Td>{resourceText(s)}</Table.Td>
                  <Table.Td>
                    <Group gap={6} wrap="nowrap">
                      <Button size="xs" variant="default" onClick={() => setShown(shown === s.name ? undefined : s.name)} aria-label={`History of ${s.name}`} aria-pressed={shown === s.name}>
                        History
                      </Button>
                      {mayManage && (
                        <Button size="xs" color="red" variant="light" onClick={() => setDialog({ action: 'ban', site: s })} aria-label={`Ban ${s.name}`}>
                          Ban
                        </Button>
                      )}
                      {mayManage && banned.length > 0 && (
                        <Button size="xs" variant="light" onClick={() => setDialog({ action: 'unban', site: s })} aria-label={`Unban ${s.name}`}>
                          Unban
                        </Button>
                      )}
                    </Group>
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {shown && (
        <Stack gap="xs">
          <Title order={2} size="h4">
            History of {shown}
          </Title>
          <History key={`${shown}-${version}`} site={shown} />
        </Stack>
      )}
      {dialog && (
        <StatusDialog
          action={dialog.action}
          site={dialog.site.name}
          banned={[...(dialog.site.ban ? [''] : []), ...dialog.site.bannedResources.map((r) => r.resource)]}
          onCancel={() => setDialog(undefined)}
          onDone={() => {
            setDialog(undefined);
            setVersion((v) => v + 1);
            void reload();
          }}
        />
      )}
    </Stack>
  );
}
