/**
 * A workflow drawn as a graph: one box per node, in columns by dependency depth, edges from parents to
 * children as SVG curves with arrows. A box names its node, counts its jobs and shows their statuses:
 * one chip per job (a link to the job) up to CHIPS_MAX jobs, a stacked bar beyond. Colours are the job
 * monitor's, and every status is also in words (the chips' names, the counts line), so that colour is
 * never the only sign. The edges are drawn for the eye only: the boxes say what each node depends on.
 */
import { useId, useMemo } from 'react';
import { Paper, Progress, Text, VisuallyHidden } from '@mantine/core';
import { statusColor } from '../jobs/attributes.ts';
import { basePath, navigate } from '../url-state.ts';
import { layout } from './layout.ts';
import { countJobs, countsText, orderedCounts, type WorkflowDetail, type WorkflowJob, type WorkflowNode } from './model.ts';

/** Up to this many jobs a node shows one chip per job; beyond, a stacked bar with counts. */
export const CHIPS_MAX = 24;
/** Chips per row in a box, and the height of a row of chips (16 pixels and a gap of 4). */
const CHIPS_PER_ROW = 10;
const CHIP_ROW = 20;
const BOX_WIDTH = 236;
/** A box's height without its chips: padding, name, job count, the counts line (two lines at most). */
const BOX_FRAME = 96;

/** Rows of chips the fullest node needs (a stacked bar with its counts takes the room of three). */
function chipRows(nodes: readonly WorkflowNode[]): number {
  return Math.max(1, ...nodes.map((n) => (n.JobIDs.length > CHIPS_MAX ? 3 : Math.ceil(n.JobIDs.length / CHIPS_PER_ROW))));
}
const GAP = { column: 72, row: 24 };

/** Held by someone (Held) or by its exit code: worth telling apart from a job that merely waits. */
const isHeld = (j: WorkflowJob) => j.Status === 'Received' && (j.HoldReason === 'Held' || j.HoldReason === 'ExitCode');

export function jobLabel(j: WorkflowJob): string {
  return `Job ${j.JobID}: ${j.Status}${j.HoldReason ? ` (${j.HoldReason})` : ''}`;
}

function JobChip({ job }: { job: WorkflowJob }) {
  const color = statusColor(job.Status);
  const label = jobLabel(job);
  return (
    <a
      href={`${basePath()}?job=${job.JobID}`}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey) return;
        e.preventDefault();
        navigate('', { job: String(job.JobID) });
      }}
      className={isHeld(job) ? 'wf-chip wf-chip-held' : 'wf-chip'}
      style={{ backgroundColor: `var(--mantine-color-${color}-filled)`, borderColor: `var(--mantine-color-${color}-9)` }}
      aria-label={label}
      title={job.MinorStatus ? `${label} · ${job.MinorStatus}` : label}
      data-jid={job.JobID}
      data-status={job.Status}
      data-hold={job.HoldReason}
    />
  );
}

/** Hidden from screen readers: the counts line under it says the same. */
function StatusBar({ counts, total }: { counts: Record<string, number>; total: number }) {
  return (
    <Progress.Root size={16} mt={6} aria-hidden>
      {orderedCounts(counts).map((c) => (
        <Progress.Section key={c.status} value={(100 * c.count) / Math.max(1, total)} color={statusColor(c.status)} data-status={c.status} />
      ))}
    </Progress.Root>
  );
}

function NodeBox({ node, jobs, x, y, height }: { node: WorkflowNode; jobs: WorkflowJob[]; x: number; y: number; height: number }) {
  const counts = countJobs(jobs);
  const held = jobs.filter(isHeld).length;
  const parents = node.DependsOn.length ? `after ${node.DependsOn.join(', ')} (${node.DependencyType})` : 'no dependency';
  return (
    <Paper
      withBorder
      radius="md"
      p={10}
      shadow="xs"
      component="li"
      style={{ position: 'absolute', left: x, top: y, width: BOX_WIDTH, height, overflow: 'hidden', listStyle: 'none' }}
      data-testid="workflow-node"
      data-node={node.Name}
    >
      <Text fw={700} size="sm" truncate="end" title={node.Name} component="h3" m={0}>
        {node.Name}
      </Text>
      <Text size="xs" c="dimmed" truncate="end" title={parents}>
        {jobs.length} {jobs.length === 1 ? 'job' : 'jobs'}
        {held ? `, ${held} held` : ''}
        <VisuallyHidden>, {parents}</VisuallyHidden>
      </Text>
      {jobs.length <= CHIPS_MAX ? (
        <>
          <ul className="wf-chips" aria-label={`Jobs of ${node.Name}`} style={{ height: Math.ceil(jobs.length / CHIPS_PER_ROW) * CHIP_ROW }}>
            {jobs.map((j) => (
              <li key={j.JobID}>
                <JobChip job={j} />
              </li>
            ))}
          </ul>
          <Text size="xs" lineClamp={2} data-testid="node-counts">
            {countsText(counts) || 'no job'}
          </Text>
        </>
      ) : (
        <>
          <StatusBar counts={counts} total={jobs.length} />
          <Text size="xs" lineClamp={4} mt={8} data-testid="node-counts">
            {countsText(counts)}
          </Text>
        </>
      )}
    </Paper>
  );
}

export function WorkflowGraph({ workflow }: { workflow: WorkflowDetail }) {
  const arrow = `wf-arrow-${useId().replace(/:/g, '')}`;
  // The shape changes only with the nodes, not with their jobs' statuses.
  const height = BOX_FRAME + chipRows(workflow.Nodes) * CHIP_ROW;
  const shapeKey = JSON.stringify(workflow.Nodes.map((n) => [n.Name, n.DependsOn]));
  const shape = useMemo(() => {
    const nodes = (JSON.parse(shapeKey) as [string, string[]][]).map(([name, dependsOn]) => ({ name, dependsOn }));
    return layout(nodes, { box: { width: BOX_WIDTH, height }, gap: GAP });
  }, [shapeKey, height]);
  const jobsOf = useMemo(() => {
    const byId = new Map(workflow.Jobs.map((j) => [j.JobID, j]));
    return new Map(workflow.Nodes.map((n) => [n.Name, n.JobIDs.flatMap((id) => byId.get(id) ?? [])]));
  }, [workflow]);
  const nodeByName = new Map(workflow.Nodes.map((n) => [n.Name, n]));
  // Reading and tabbing order: column by column, top to bottom, as the eye goes.
  const order = [...shape.nodes].sort((a, b) => a.column - b.column || a.row - b.row);
  return (
    <div className="wf-graph" tabIndex={0} role="region" aria-label={`Graph of the workflow: ${workflow.Nodes.length} nodes`} data-testid="workflow-graph">
      <div style={{ position: 'relative', width: shape.width, height: shape.height }}>
        <svg width={shape.width} height={shape.height} style={{ position: 'absolute', inset: 0 }} aria-hidden focusable="false">
          <defs>
            <marker id={arrow} viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">
              <path d="M0,0 L10,5 L0,10 z" fill="var(--mantine-color-dimmed)" />
            </marker>
          </defs>
          {shape.edges.map((e) => {
            const bend = GAP.column / 2;
            return (
              <path
                key={`${e.from}>${e.to}`}
                d={`M${e.x1},${e.y1} C${e.x1 + bend},${e.y1} ${e.x2 - bend},${e.y2} ${e.x2 - 1},${e.y2}`}
                fill="none"
                stroke="var(--mantine-color-dimmed)"
                strokeWidth={1.5}
                markerEnd={`url(#${arrow})`}
                data-edge={`${e.from}>${e.to}`}
              />
            );
          })}
        </svg>
        <ul style={{ margin: 0, padding: 0 }} aria-label="Nodes">
          {order.map((p) => (
            <NodeBox key={p.name} node={nodeByName.get(p.name)!} jobs={jobsOf.get(p.name) ?? []} x={p.x} y={p.y} height={height} />
          ))}
        </ul>
      </div>
    </div>
  );
}
