/**
 * Pilots (docs/pilots.md): how many pilots each agents site has in each state, the pilots themselves
 * (filtered by site and state, newest first), and one pilot's details, jobs and batch output. Counts and
 * list are read again every few seconds. Drain, Stop and Revoke are offered to groups with SiteManager or
 * JobAdministrator, and ask first, naming the pilots; the server decides (its refusal is shown).
 */
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Alert, Button, Checkbox, Group, MultiSelect, Select, Stack, Table, Text, Title, VisuallyHidden } from '@mantine/core';
import type { operations } from '@dirigo/client/schema';
import { api, unwrap } from '../api.ts';
import { useMayManage } from '../account/may-manage.ts';
import { formatTimestamp } from '../time-format.ts';
import { updateParams } from '../url-state.ts';
import { ConfirmPilots, type PilotAction } from './ConfirmPilots.tsx';
import { PilotPanel } from './PilotPanel.tsx';
import { isEnded, STATES, StateBadge } from './pilot-state.tsx';

export type Pilot = operations['listPilots']['responses'][200]['content']['application/json']['pilots'][number];
type SummaryRow = operations['summarizePilots']['responses'][200]['content']['application/json']['summary'][number];

const PAGE = 100;
/** How often counts and list are read again. */
const REFRESH_MS = 5000;

/** Counts per site (rows) and state (columns); only the states some site has. */
function Summary({ rows }: { rows: SummaryRow[] }) {
  const sites = [...new Set(rows.map((r) => r.Site))];
  const states = STATES.filter((s) => rows.some((r) => r.State === s));
  if (rows.length === 0) return <Text size="sm">No pilot yet.</Text>;
  const count = (site: string, state: string) => rows.find((r) => r.Site === site && r.State === state)?.Count ?? 0;
  return (
    <Table.ScrollContainer minWidth={400}>
      <Table striped withTableBorder data-testid="pilot-summary">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Site</Table.Th>
            {states.map((s) => (
              <Table.Th scope="col" key={s}>
                {s}
              </Table.Th>
            ))}
            <Table.Th scope="col">All</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {sites.map((site) => (
            <Table.Tr key={site} data-site={site}>
              <Table.Th scope="row">{site}</Table.Th>
              {states.map((s) => (
                <Table.Td key={s} data-state={s}>
                  {count(site, s)}
                </Table.Td>
              ))}
              <Table.Td>{rows.filter((r) => r.Site === site).reduce((n, r) => n + r.Count, 0)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

export function PilotsPage({ params }: { params: URLSearchParams }) {
  const site = params.get('site') ?? '';
  const states = params.getAll('state');
  const offset = Math.max(0, Number(params.get('offset') ?? 0) || 0);
  const selectedPilot = Number(params.get('pilot') ?? '') || undefined;
  const [summary, setSummary] = useState<SummaryRow[]>();
  const [list, setList] = useState<{ pilots: Pilot[]; total: number }>();
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [confirming, setConfirming] = useState<{ action: PilotAction; pilots: Pilot[] }>();
  const mayManage = useMayManage();
  const stateKey = states.join(',');

  const load = useCallback(async () => {
    try {
      const query = { ...(site ? { site } : {}), ...(stateKey ? { state: stateKey.split(',') as Pilot['State'][] } : {}) };
      const [s, l] = await Promise.all([api.GET('/pilots/summary'), api.GET('/pilots', { params: { query: { ...query, limit: PAGE, offset } } })]);
      setSummary(unwrap(s).summary);
      setList(unwrap(l));
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [site, stateKey, offset]);
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [load]);

  const sites = useMemo(() => [...new Set(summary?.map((r) => r.Site) ?? [])].sort(), [summary]);
  const shown = list?.pilots ?? [];
  const chosen = shown.filter((p) => selected.has(p.PilotID));
  const live = chosen.filter((p) => !isEnded(p.State));

  const act = async (action: PilotAction, pilots: Pilot[], reason: string | undefined) => {
    setConfirming(undefined);
    try {
      const done = unwrap(await api.POST('/pilots/command', { body: { command: action, pilots: pilots.map((p) => p.PilotID), ...(reason ? { reason } : {}) } }));
      setNotice(`${action}: ${done.pilots.length ? done.pilots.map((id) => `pilot ${id}`).join(', ') : 'no pilot that has not ended'}`);
      setSelected(new Set());
      await load();
    } catch (e) {
      setNotice(undefined);
      setError((e as Error).message);
    }
  };

  return (
    <Stack gap="lg">
      <Title order={1} size="h2">
        Pilots
      </Title>
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
      <Stack gap="xs">
        <Title order={2} size="h4">
          Pilots per site and state
        </Title>
        {summary && <Summary rows={summary} />}
      </Stack>
      <Group gap="sm" align="flex-end">
        <Select label="Site" placeholder="Any site" clearable data={sites} value={site || null} onChange={(v) => updateParams({ site: v ?? undefined, offset: undefined })} w={200} />
        <MultiSelect label="State" placeholder="Any state" clearable data={[...STATES]} value={states} onChange={(v) => updateParams({ state: v, offset: undefined })} w={320} />
        {mayManage && (
          <Group gap={6}>
            {(['drain', 'stop', 'revoke'] as const).map((action) => (
              <Button key={action} size="sm" variant="light" color={action === 'revoke' ? 'red' : 'blue'} disabled={live.length === 0} onClick={() => setConfirming({ action, pilots: live })}>
                {action[0]!.toUpperCase() + action.slice(1)} selected
              </Button>
            ))}
          </Group>
        )}
      </Group>
      {list && (
        <Text size="sm" data-testid="pilot-count">
          {list.total === 0 ? 'No pilot matches.' : `Pilots ${offset + 1}–${offset + list.pilots.length} of ${list.total}, newest first.`}
        </Text>
      )}
      <Table.ScrollContainer minWidth={1000}>
        <Table striped highlightOnHover data-testid="pilots">
          <Table.Thead>
            <Table.Tr>
              {mayManage && (
                <Table.Th>
                  <VisuallyHidden>Selected</VisuallyHidden>
                </Table.Th>
              )}
              <Table.Th>Pilot</Table.Th>
              <Table.Th>Site</Table.Th>
              <Table.Th>State</Table.Th>
              <Table.Th>Origin</Table.Th>
              <Table.Th>Batch</Table.Th>
              <Table.Th>Owner</Table.Th>
              <Table.Th>Jobs</Table.Th>
              <Table.Th>Command</Table.Th>
              <Table.Th>Submitted</Table.Th>
              <Table.Th>Reason</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {shown.map((p) => (
              <Table.Tr key={p.PilotID} data-pilot={p.PilotID} data-state={p.State}>
                {mayManage && (
                  <Table.Td>
                    <Checkbox
                      aria-label={`Select pilot ${p.PilotID}`}
                      checked={selected.has(p.PilotID)}
                      onChange={(e) => {
                        const on = e.currentTarget.checked;
                        setSelected((old) => {
                          const next = new Set(old);
                          if (on) next.add(p.PilotID);
                          else next.delete(p.PilotID);
                          return next;
                        });
                      }}
                    />
                  </Table.Td>
                )}
                <Table.Td>
                  <Button size="compact-sm" variant="subtle" onClick={() => updateParams({ pilot: String(p.PilotID) }, false)} aria-label={`Open pilot ${p.PilotID}`}>
                    {p.PilotID}
                  </Button>
                </Table.Td>
                <Table.Td>{p.Resource ? `${p.Site} / ${p.Resource}` : p.Site}</Table.Td>
                <Table.Td>
                  <StateBadge state={p.State} />
                </Table.Td>
                <Table.Td>{p.Origin}</Table.Td>
                <Table.Td>{p.BatchReference ?? '—'}</Table.Td>
                <Table.Td>{p.Owner}</Table.Td>
                <Table.Td>{p.JobCount}</Table.Td>
                <Table.Td>{p.Command ?? '—'}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatTimestamp(p.SubmittedAt)}</Table.Td>
                <Table.Td>{p.Reason || '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {list && list.total > PAGE && (
        <Group gap="xs">
          <Button variant="default" size="xs" disabled={offset === 0} onClick={() => updateParams({ offset: offset > PAGE ? String(offset - PAGE) : undefined })}>
            Newer
          </Button>
          <Button variant="default" size="xs" disabled={offset + PAGE >= list.total} onClick={() => updateParams({ offset: String(offset + PAGE) })}>
            Older
          </Button>
        </Group>
      )}
      {selectedPilot !== undefined && (
        <PilotPanel
          pilotId={selectedPilot}
          mayManage={mayManage}
          onClose={() => updateParams({ pilot: undefined }, false)}
          onAction={(action, pilot) => setConfirming({ action, pilots: [pilot] })}
          version={list}
        />
      )}
      {confirming && <ConfirmPilots action={confirming.action} pilots={confirming.pilots} onCancel={() => setConfirming(undefined)} onConfirm={(reason) => void act(confirming.action, confirming.pilots, reason)} />}
    </Stack>
  );
}
