/**
 * One workflow (docs/workflows.md): its Status, name, MaxRunning and counts, its graph, and the same
 * nodes as a table (the graph's words). Live as the job monitor is: the job events stream of the
 * workflow's jobs changes the chips in place and reloads the workflow at most every RELOAD_MS; without
 * the stream, and now and then with it, the workflow is read again. Kill (asked first, naming the jobs),
 * Hold and Release are offered to its owner and to JobAdministrators; the server decides.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { Alert, Anchor, Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { ApiError } from '../api.ts';
import { useMayActOn } from '../account/may-manage.ts';
import { isFinal, statusColor } from '../jobs/attributes.ts';
import { followJobEvents } from '../jobs/events.ts';
import { ConfirmJobs } from '../jobs/ConfirmJobs.tsx';
import { formatTimestamp } from '../time-format.ts';
import { basePath, navigate } from '../url-state.ts';
import { WorkflowGraph } from './WorkflowGraph.tsx';
import { actOnWorkflow, countJobs, countsText, getWorkflow, orderedCounts, workflowColor, type WorkflowAction, type WorkflowDetail } from './model.ts';

/** After events, the workflow is read again at most this often. */
const RELOAD_MS = 2_000;
/** Read again this often whatever comes (a hold reason changes without a status event); without the stream, every RELOAD_MS. */
const SAFETY_MS = 10_000;

function NodesTable({ workflow }: { workflow: WorkflowDetail }) {
  // By the nodes' job ids: a throttled parametric set's jobs have no node name of their own.
  const byId = new Map(workflow.Jobs.map((j) => [j.JobID, j]));
  const jobsOf = (n: WorkflowDetail['Nodes'][number]) => n.JobIDs.flatMap((id) => byId.get(id) ?? []);
  return (
    <Table.ScrollContainer minWidth={560}>
      <Table striped withTableBorder aria-labelledby="workflow-nodes-title" data-testid="workflow-nodes">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Node</Table.Th>
            <Table.Th scope="col">Depends on</Table.Th>
            <Table.Th scope="col">Jobs</Table.Th>
            <Table.Th scope="col">Statuses</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {workflow.Nodes.map((n) => (
            <Table.Tr key={n.Name} data-node={n.Name}>
              <Table.Th scope="row">{n.Name}</Table.Th>
              <Table.Td>{n.DependsOn.length ? `${n.DependsOn.join(', ')} (${n.DependencyType})` : '—'}</Table.Td>
              <Table.Td>{n.JobIDs.length}</Table.Td>
              <Table.Td data-testid="node-statuses">{countsText(countJobs(jobsOf(n))) || '—'}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

export function WorkflowPage({ wid }: { wid: number }) {
  const [workflow, setWorkflow] = useState<WorkflowDetail>();
  const [error, setError] = useState<string>();
  const [missing, setMissing] = useState(false);
  const [notice, setNotice] = useState<string>();
  const [live, setLive] = useState(false);
  const [confirmingKill, setConfirmingKill] = useState(false);
  const mayAct = useMayActOn(workflow?.Owner, workflow?.OwnerGroup);

  const load = useCallback(async () => {
    try {
      setWorkflow(await getWorkflow(wid));
      setError(undefined);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) setMissing(true);
      setError((e as Error).message);
    }
  }, [wid]);

  const reloadSoon = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => {
    void load();
    const stop = new AbortController();
    const later = () => {
      if (reloadSoon.current) return;
      reloadSoon.current = setTimeout(() => {
        reloadSoon.current = undefined;
        void load();
      }, RELOAD_MS);
    };
    followJobEvents(
      new URLSearchParams({ allOwners: 'true', WorkflowID: String(wid) }),
      {
        status: (e) => {
          setWorkflow((w) => {
            if (!w || !w.Jobs.some((j) => j.JobID === e.JobID)) return w;
            return { ...w, Jobs: w.Jobs.map((j) => (j.JobID === e.JobID ? { ...j, Status: e.Status, MinorStatus: e.MinorStatus } : j)) };
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
  }, [wid, load]);

  useEffect(() => {
    const timer = setInterval(() => void load(), live ? SAFETY_MS : RELOAD_MS);
    return () => clearInterval(timer);
  }, [live, load]);

  const act = async (action: WorkflowAction) => {
    try {
      const { done, refused } = await actOnWorkflow(action, wid);
      const shown = refused.slice(0, 3).map((r) => `job ${r.jid} (${r.error_description})`);
      const more = refused.length > 3 ? ` and ${refused.length - 3} more` : '';
      setNotice(`${action}: ${done} ${done === 1 ? 'job' : 'jobs'}${refused.length ? `; refused: ${shown.join(', ')}${more}` : ''}`);
      await load();
    } catch (e) {
      setNotice(undefined);
      setError((e as Error).message);
    }
  };

  const title = `Workflow ${wid}${workflow?.Name ? ` · ${workflow.Name}` : ''}`;
  const open = workflow?.Jobs.filter((j) => !isFinal(j.Status)) ?? [];
  const monitor = new URLSearchParams({ allOwners: 'true', WorkflowID: String(wid) });

  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={1} size="h2">
          {title}
        </Title>
        <Group gap="xs">
          <Anchor
            size="sm"
            href={`${basePath()}workflows`}
            onClick={(e) => {
              e.preventDefault();
              navigate('workflows');
            }}
          >
            All workflows
          </Anchor>
          <Badge color={live ? 'green' : 'gray'} variant="dot" aria-live="polite">
            {live ? 'Live' : 'Connecting'}
          </Badge>
        </Group>
      </Group>
      {error && (
        <Alert color="red" role="alert" title={missing ? `There is no workflow ${wid} you may see` : 'The workflow could not be read'}>
          {error}
        </Alert>
      )}
      {workflow && (
        <>
          <Group gap="lg" data-testid="workflow-facts">
            <Badge color={workflowColor(workflow.Status)} variant="dot" size="lg" data-testid="workflow-status" data-status={workflow.Status}>
              {workflow.Status}
            </Badge>
            <Text size="sm">
              <b>Kind</b> {workflow.Kind}
            </Text>
            <Text size="sm">
              <b>Owner</b> {workflow.Owner} ({workflow.OwnerGroup})
            </Text>
            <Text size="sm" data-testid="workflow-max-running">
              <b>MaxRunning</b> {workflow.MaxRunning ?? 'no limit'}
            </Text>
            <Text size="sm">
              <b>Submitted</b> {formatTimestamp(workflow.SubmissionTime)}
            </Text>
          </Group>
          <Group gap={6} data-testid="workflow-counts">
            <Text size="sm" fw={600}>
              {workflow.Jobs.length} {workflow.Jobs.length === 1 ? 'job' : 'jobs'}
            </Text>
            {orderedCounts(countJobs(workflow.Jobs)).map((c) => (
              <Badge key={c.status} color={statusColor(c.status)} variant="dot" data-status={c.status}>
                {c.status} {c.count}
              </Badge>
            ))}
          </Group>
          <Group gap="xs">
            {mayAct && workflow.Status === 'Active' && (
              <>
                <Button size="xs" color="red" disabled={!open.length} onClick={() => setConfirmingKill(true)}>
                  Kill
                </Button>
                <Button size="xs" variant="default" onClick={() => void act('hold')}>
                  Hold
                </Button>
                <Button size="xs" variant="default" onClick={() => void act('release')}>
                  Release
                </Button>
              </>
            )}
            <Anchor
              size="sm"
              href={`${basePath()}?${monitor.toString()}`}
              onClick={(e) => {
                e.preventDefault();
                navigate('', monitor);
              }}
            >
              Its jobs in the job monitor
            </Anchor>
          </Group>
          {notice && (
            <Alert color="blue" role="status" withCloseButton closeButtonLabel="Dismiss" onClose={() => setNotice(undefined)}>
              {notice}
            </Alert>
          )}
          <Title order={2} size="h4">
            Graph
          </Title>
          <WorkflowGraph workflow={workflow} />
          <Title order={2} size="h4" id="workflow-nodes-title">
            Nodes
          </Title>
          <NodesTable workflow={workflow} />
        </>
      )}
      {confirmingKill && workflow && (
        <ConfirmJobs
          action="kill"
          jobs={open.map((j) => ({ jid: j.JobID, name: j.Node, status: j.Status }))}
          onCancel={() => setConfirmingKill(false)}
          onConfirm={() => {
            setConfirmingKill(false);
            void act('kill');
          }}
        />
      )}
    </Stack>
  );
}
