/**
 * Where a job stands among others (docs/workflows.md): its workflow and node (a link to the workflow's
 * graph), why it is held, its automatic retries, the jobs it waits for and the jobs that wait for it,
 * each a link to that job. Nothing is shown for a job that stands alone, has no retries and is not held.
 */
import type { ReactNode } from 'react';
import { Anchor, Group, Text } from '@mantine/core';
import { FieldTable } from '../FieldTable.tsx';
import { basePath, navigate, updateParams } from '../url-state.ts';
import type { JobDetail } from './attributes.ts';

function JobLink({ jid, status }: { jid: number; status?: string | null | undefined }) {
  return (
    <Anchor
      size="sm"
      underline="always"
      href={`${basePath()}?job=${jid}`}
      onClick={(e) => {
        e.preventDefault();
        updateParams({ job: String(jid) }, false);
      }}
    >
      Job {jid}
      {status ? ` (${status})` : ''}
    </Anchor>
  );
}

function Jobs({ jobs, testId }: { jobs: { JobID: number; Status?: string | null }[]; testId: string }) {
  return (
    <Group gap="xs" data-testid={testId}>
      {jobs.map((j) => (
        <JobLink key={j.JobID} jid={j.JobID} status={j.Status} />
      ))}
    </Group>
  );
}

export function JobFlow({ job }: { job: JobDetail }) {
  const rows: [string, ReactNode][] = [];
  if (job.WorkflowID !== null && job.WorkflowID !== undefined) {
    const wid = job.WorkflowID;
    rows.push([
      'Workflow',
      <Text size="sm" key="w" data-testid="panel-workflow">
        <Anchor
          size="sm"
          underline="always"
          href={`${basePath()}workflows/${wid}`}
          onClick={(e) => {
            e.preventDefault();
            navigate(`workflows/${wid}`);
          }}
        >
          Workflow {wid}
        </Anchor>
        {job.WorkflowNode ? `, node ${job.WorkflowNode}` : ''}
      </Text>,
    ]);
  }
  if (job.HoldReason) rows.push(['Hold reason', <span key="h" data-testid="panel-hold-reason">{job.HoldReason}</span>]);
  if ((job.MaxRetries ?? 0) > 0 || (job.RetryCounter ?? 0) > 0) rows.push(['Retries', `${job.RetryCounter ?? 0} of ${job.MaxRetries ?? 0}`]);
  if (job.Parents.length) rows.push([`Depends on (${job.DependencyType ?? 'afterok'})`, <Jobs key="p" jobs={job.Parents} testId="panel-parents" />]);
  if (job.Children.length) rows.push([job.ChildrenCount > job.Children.length ? `Its dependents (first ${job.Children.length} of ${job.ChildrenCount})` : 'Its dependents', <Jobs key="c" jobs={job.Children.map((JobID) => ({ JobID }))} testId="panel-children" />]);
  if (!rows.length) return null;
  return <FieldTable rows={rows} withTableBorder data-testid="job-flow" />;
}
