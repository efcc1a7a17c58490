/**
 * The job monitor: status counts, filters, a page of jobs from POST /jobs/search (keyset cursors, so the
 * millionth job costs what the first does), actions on a selection, and live changes from the events
 * stream applied to the rows in place.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Alert, Badge, Button, Group, Menu, Checkbox, Select, Stack, Text, Title, Tooltip, Progress } from '@mantine/core';
import { api, unwrap } from '../api.ts';
import { updateParams } from '../url-state.ts';
import { ATTRIBUTES, isFinal, STATUSES, statusColor, type Attribute, type JobRecord } from './attributes.ts';
import { followJobEvents } from './events.ts';
import { JobFilters } from './JobFilters.tsx';
import { JobTable } from './JobTable.tsx';
import { JobPanel } from './JobPanel.tsx';
import { PAGE_SIZES, readView, restrictions, searchBody } from './query.ts';
import { actOnJobs, type JobAction } from './actions.ts';
import { ConfirmJobs, type JobRef } from './ConfirmJobs.tsx';

interface Summary {
  total: number;
  byStatus: { status: string; count: number }[];
}

function SummaryBar({ summary }: { summary: Summary | undefined }) {
  if (!summary) return <Text size="sm">Counting jobs…</Text>;
  return (
    <Stack gap={6}>
      <Progress.Root size={18}>
        {summary.byStatus.map((s) => (
          <Tooltip key={s.status} label={`${s.status}: ${s.count}`}>
            <Progress.Section value={(100 * s.count) / Math.max(1, summary.total)} color={statusColor(s.status)} aria-label={`${s.status}: ${s.count} of ${summary.total}`} />
          </Tooltip>
        ))}
      </Progress.Root>
      <Group gap={6} data-testid="status-counts">
        <Text size="sm" fw={600}>
          {summary.total.toLocaleString('en')} {summary.total === 1 ? 'job' : 'jobs'}
        </Text>
        {summary.byStatus.map((s) => (
          <Badge key={s.status} color={statusColor(s.status)} variant="dot" data-status={s.status}>
            {s.status} {s.count.toLocaleString('en')}
          </Badge>
        ))}
      </Group>
    </Stack>
  );
}

export function JobMonitor({ params }: { params: URLSearchParams }) {
  const view = useMemo(() => readView(params), [params]);
  const [jobs, setJobs] = useState<JobRecord[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [summary, setSummary] = useState<Summary>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(false);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [live, setLive] = useState(false);
  const [notice, setNotice] = useState<string>();
  const [confirming, setConfirming] = useState<'kill' | 'delete'>();
  const previous = useRef<(string | undefined)[]>([]);
  const body = useMemo(() => JSON.stringify(searchBody(view)), [view]);
  const filterKey = restrictions(view).toString();

  const load = useCallback(async () => {
    setLoading(true);
    try {
      const page = unwrap(await api.POST('/jobs/search', { body: JSON.parse(body) as never }));
      setJobs(page.jobs as JobRecord[]);
      setNextCursor(page.nextCursor);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setLoading(false);
    }
  }, [body]);

  const loadSummary = useCallback(async () => {
    const q = new URLSearchParams(filterKey);
    const all: Record<string, unknown> = { groupBy: ['Status'] };
    for (const key of new Set(q.keys())) all[key] = key === 'allOwners' ? true : q.getAll(key);
    const answer = unwrap(await api.GET('/jobs/summary', { params: { query: all as never } }));
    const byStatus = answer.summary
      .map((s) => ({ status: String(s.Status), count: s.count }))
      .sort((a, b) => STATUSES.indexOf(a.status as never) - STATUSES.indexOf(b.status as never));
    setSummary({ total: answer.total, byStatus });
  }, [filterKey]);

  useEffect(() => void load(), [load]);
  useEffect(() => void loadSummary().catch(() => undefined), [loadSummary]);

  // Live changes: rows change in place; jobs not on the page and the counts are reloaded, at most every 2 s.
  const reloadSoon = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => {
    const stop = new AbortController();
    const later = () => {
      if (reloadSoon.current) return;
      reloadSoon.current = setTimeout(() => {
        reloadSoon.current = undefined;
        void loadSummary().catch(() => undefined);
        if (!view.cursor) void load();
      }, 2_000);
    };
    followJobEvents(
      new URLSearchParams(filterKey),
      {
        status: (e) => {
          setJobs((rows) => {
            const i = rows.findIndex((r) => r.JobID === e.JobID);
            if (i === -1) return rows;
            const next = [...rows];
            next[i] = { ...rows[i]!, Status: e.Status, MinorStatus: e.MinorStatus, ApplicationStatus: e.ApplicationStatus, LastUpdateTime: e.Time };
            return next;
          });
          later();
        },
        reset: later,
        connected: setLive,
      },
      stop.signal,
    );
    return () => {
      stop.abort();
      clearTimeout(reloadSoon.current);
      reloadSoon.current = undefined;
    };
  }, [filterKey, load, loadSummary, view.cursor]);

  const act = async (action: JobAction, jids: number[]) => {
    try {
      const { done, refused } = await actOnJobs(action, jids);
      setNotice(`${action}: ${done} of ${jids.length} jobs${refused.length ? `; refused: ${refused.map((r) => `${r.jid} (${r.error_description})`).join(', ')}` : ''}`);
      setSelected(new Set());
      await load();
      await loadSummary();
    } catch (e) {
      setNotice((e as Error).message);
    }
  };

  // Stable callbacks: the table's rows re-render only when their own job or selection changes.
  const select = useCallback((jids: number[], on: boolean) => {
    setSelected((s) => {
      const next = new Set(s);
      for (const j of jids) {
        if (on) next.add(j);
        else next.delete(j);
      }
      return next;
    });
  }, []);
  const open = useCallback((jid: number) => updateParams({ job: String(jid) }, false), []);

  // What the confirmation names; a finished job is not offered to kill (there is nothing left to stop).
  const byId = useMemo(() => new Map(jobs.map((j) => [j.JobID ?? 0, j])), [jobs]);
  const chosen: JobRef[] = [...selected].map((jid) => ({ jid, name: byId.get(jid)?.JobName, status: byId.get(jid)?.Status }));
  const killable = chosen.filter((j) => !isFinal(j.status));
  const killReason = chosen.length > 0 && killable.length === 0 ? 'The selected jobs have finished (Done, Failed, Killed or Deleted): there is nothing to kill.' : undefined;

  const sortBy = (attribute: Attribute) => {
    const descending = view.sort.attribute === attribute ? !view.sort.descending : attribute === 'JobID' || attribute.endsWith('Time');
    updateParams({ sort: `${descending ? '-' : ''}${attribute}`, cursor: undefined });
  };

  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={1} size="h2">
          Job monitor
        </Title>
        <Group gap="xs">
          <Badge color={live ? 'green' : 'gray'} variant="dot" aria-live="polite">
            {live ? 'Live' : 'Connecting'}
          </Badge>
        </Group>
      </Group>
      <SummaryBar summary={summary} />
      <JobFilters view={view} onChange={(c) => updateParams(c)} />
      <Group justify="space-between" wrap="wrap">
        <Group gap="xs">
          <Text size="sm" aria-live="polite">
            {selected.size} selected
          </Text>
          {/* A disabled button gets no pointer events: the wrapper shows why. */}
          <Tooltip label={killReason} disabled={!killReason}>
            <span data-testid="kill-selected">
              <Button size="xs" color="red" disabled={!killable.length} onClick={() => setConfirming('kill')}>
                Kill
              </Button>
            </span>
          </Tooltip>
          <Button size="xs" variant="light" disabled={!selected.size} onClick={() => void act('reschedule', [...selected])}>
            Reschedule
          </Button>
          <Button size="xs" variant="light" disabled={!selected.size} onClick={() => void act('hold', [...selected])}>
            Hold
          </Button>
          <Button size="xs" variant="light" disabled={!selected.size} onClick={() => void act('release', [...selected])}>
            Release
          </Button>
          <Button size="xs" variant="light" color="gray" disabled={!selected.size} onClick={() => setConfirming('delete')}>
            Delete
          </Button>
        </Group>
        <Group gap="xs">
          <Menu closeOnItemClick={false} position="bottom-end">
            <Menu.Target>
              <Button size="xs" variant="default">
                Columns
              </Button>
            </Menu.Target>
            <Menu.Dropdown mah={360} style={{ overflowY: 'auto' }}>
              {ATTRIBUTES.map((a) => (
                <Menu.Item key={a} component="div">
                  <Checkbox
                    label={a}
                    checked={view.columns.includes(a)}
                    onChange={(e) => {
                      const columns = e.currentTarget.checked ? ATTRIBUTES.filter((x) => x === a || view.columns.includes(x)) : view.columns.filter((x) => x !== a);
                      updateParams({ cols: columns.join(',') });
                    }}
                  />
                </Menu.Item>
              ))}
            </Menu.Dropdown>
          </Menu>
          <Select
            aria-label="Jobs per page"
            size="xs"
            // Room for the longest label, '1000 per page', beside the arrow.
            w={140}
            data={PAGE_SIZES.map((n) => ({ value: String(n), label: `${n} per page` }))}
            value={String(view.size)}
            onChange={(v) => updateParams({ size: v ?? undefined, cursor: undefined })}
            allowDeselect={false}
          />
        </Group>
      </Group>
      {notice && (
        <Alert color="blue" withCloseButton closeButtonLabel="Dismiss" onClose={() => setNotice(undefined)} role="status">
          {notice}
        </Alert>
      )}
      {error && (
        <Alert color="red" title="The jobs could not be listed" role="alert">
          {error}
        </Alert>
      )}
      <JobTable
        jobs={jobs}
        columns={view.columns}
        sort={view.sort}
        onSort={sortBy}
        selected={selected}
        onSelect={select}
        onOpen={open}
      />
      <Group justify="space-between">
        <Text size="sm">
          {loading ? 'Loading…' : jobs.length === 0 ? 'No job matches these filters.' : `${jobs.length} ${jobs.length === 1 ? 'job' : 'jobs'} on this page`}
        </Text>
        <Group gap="xs">
          <Button size="xs" variant="default" disabled={!view.cursor} onClick={() => updateParams({ cursor: previous.current.pop() }, false)}>
            Previous page
          </Button>
          <Button
            size="xs"
            variant="default"
            disabled={!nextCursor}
            onClick={() => {
              previous.current.push(view.cursor);
              updateParams({ cursor: nextCursor ?? undefined }, false);
            }}
          >
            Next page
          </Button>
        </Group>
      </Group>
      {confirming && (
        <ConfirmJobs
          action={confirming}
          jobs={confirming === 'kill' ? killable : chosen}
          leftOut={confirming === 'kill' ? chosen.length - killable.length : 0}
          onCancel={() => setConfirming(undefined)}
          onConfirm={() => {
            setConfirming(undefined);
            void act(confirming, (confirming === 'kill' ? killable : chosen).map((j) => j.jid));
          }}
        />
      )}
      {view.selected !== undefined && <JobPanel jid={view.selected} onClose={() => updateParams({ job: undefined }, false)} onChanged={() => void load()} />}
    </Stack>
  );
}
