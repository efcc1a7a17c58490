/**
 * From checked manifests to the jobs, dependencies and workflow rows to store (insert.ts): node names
 * resolved, cycles refused, parametric nodes expanded (each of a node's jobs gets all its parents, and
 * depending on a parametric node means depending on each of its jobs).
 */
import { randomBytes } from 'node:crypto';
import { InvalidRequest } from '../../kernel/errors.ts';
import type { PreparedManifest } from '../prepare.ts';
import type { FlowJob, NewWorkflow } from './insert.ts';
import { ALL_DIGITS, MAX_PARENTS, NODE_NAME } from './manifest-keys.ts';

export interface FlowPlan {
  jobs: FlowJob[];
  workflows: NewWorkflow[];
}

/** @throws InvalidRequest when the submission would make more than `max` dependency rows */
function checkDependencyCount(count: number, max: number): void {
  if (count > max) {
    throw new InvalidRequest(`DependsOn: the submission makes ${count} dependencies (each job counts each of its parent jobs); at most ${max} are allowed (jobs.workflows.maxDependencies)`);
  }
}

/**
 * POST /jobs: parents by job id; a parametric manifest with MaxRunning makes a workflow of its own.
 * @param maxDependencies jobs.workflows.maxDependencies
 */
export function planJobs(prepared: readonly PreparedManifest[], maxDependencies: number): FlowPlan {
  checkDependencyCount(
    prepared.reduce((n, { keys, jobs }) => n + keys.parentIds.length * jobs.length, 0),
    maxDependencies,
  );
  const workflows: NewWorkflow[] = [];
  const jobs = prepared.flatMap(({ keys, jobs }) => {
    let workflow: number | null = null;
    if (keys.maxRunning !== undefined) {
      // Its jobs share one JobGroup (parametric.ts): the set and its one node are named after it. Its jobs
      // have no WorkflowNode (a name given in POST /workflows; a JobGroup may be longer than one).
      const name = jobs[0]!.manifest.JobGroup ?? 'parametric';
      workflow = workflows.push({ name, kind: 'parametric', maxRunning: keys.maxRunning, nodes: [{ Name: name, DependsOn: [], DependencyType: keys.condition }] }) - 1;
    }
    return jobs.map((checked) => ({ checked, workflow, node: null, hold: keys.hold, parentIds: keys.parentIds, parentJobs: [], condition: keys.condition }));
  });
  return { jobs, workflows };
}

/** The workflow's own keys (JSON body or multipart `workflow` part). */
export interface WorkflowHead {
  name: string | undefined;
  maxRunning: number | undefined;
}

/** A cycle among `edges` (node → the nodes it depends on), as the nodes along it, first one repeated; or null. */
function findCycle(names: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  // Iterative depth-first search: a chain of a thousand nodes must not exhaust the stack.
  for (const start of names) {
    if (state.has(start)) continue;
    const stack: { node: string; next: number }[] = [{ node: start, next: 0 }];
    state.set(start, 'open');
    path.push(start);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const deps = edges.get(top.node) ?? [];
      if (top.next < deps.length) {
        const dep = deps[top.next++]!;
        const s = state.get(dep);
        if (s === 'open') return [...path.slice(path.indexOf(dep)), dep];
        if (s === undefined) {
          state.set(dep, 'open');
          path.push(dep);
          stack.push({ node: dep, next: 0 });
        }
      } else {
        state.set(top.node, 'done');
        path.pop();
        stack.pop();
      }
    }
  }
  return null;
}

/**
 * POST /workflows: each manifest a node, named by NodeName, else JobName. @returns the plan, and each
 * node's jobs (indices into plan.jobs) by name
 * @throws InvalidRequest for a name missing, repeated or unknown, a node depending on itself, a cycle, too many parents
 */
export function planWorkflow(prepared: readonly PreparedManifest[], head: WorkflowHead, maxDependencies: number): FlowPlan & { nodeJobs: Map<string, number[]> } {
  const names = prepared.map(({ where, template, keys }) => {
    const name = keys.nodeName ?? template.JobName;
    if (name === undefined) throw new InvalidRequest(`${where}: NodeName is required to name each node of a workflow (JobName is taken when it is absent)`);
    if (keys.nodeName === undefined && !NODE_NAME.test(name)) throw new InvalidRequest(`${where}: JobName '${name}' cannot name a node (letters, digits, _ . -, at most 128): give NodeName`);
    // DependsOn reads a string of digits as a job id: such a node could never be named as a parent.
    if (ALL_DIGITS.test(name)) throw new InvalidRequest(`${where}: ${keys.nodeName === undefined ? 'JobName' : 'NodeName'} '${name}' cannot name a node: a name of digits only reads as a job id in DependsOn${keys.nodeName === undefined ? '; give NodeName' : ''}`);
    return name;
  });
  const seen = new Set<string>();
  for (const [i, name] of names.entries()) {
    if (seen.has(name)) throw new InvalidRequest(`${prepared[i]!.where}: NodeName '${name}' names two nodes of the workflow`);
    seen.add(name);
  }
  const edges = new Map<string, string[]>();
  for (const [i, { where, keys }] of prepared.entries()) {
    for (const parent of keys.parentNodes) {
      if (parent === names[i]) throw new InvalidRequest(`${where}: DependsOn: node '${parent}' depends on itself`);
      if (!seen.has(parent)) throw new InvalidRequest(`${where}: DependsOn names the node '${parent}', which the workflow does not have (nodes: ${names.join(', ')})`);
    }
    edges.set(names[i]!, keys.parentNodes);
  }
  const cycle = findCycle(names, edges);
  if (cycle) throw new InvalidRequest(`DependsOn: the workflow's dependencies make a cycle: ${cycle.join(' → ')}`);
  // One cap for the workflow: its own MaxRunning, or the one its nodes agree on.
  const caps = new Set(prepared.flatMap(({ keys }) => (keys.maxRunning === undefined ? [] : [keys.maxRunning])));
  if (head.maxRunning !== undefined) caps.add(head.maxRunning);
  if (caps.size > 1) throw new InvalidRequest(`MaxRunning: a workflow has one cap, but ${[...caps].join(' and ')} are given`);
  const maxRunning = caps.size === 1 ? [...caps][0]! : null;
  // Count the rows before building any: a node's jobs each get every job of its parent nodes.
  const sizes = new Map(prepared.map(({ jobs }, i) => [names[i]!, jobs.length]));
  let rows = 0;
  for (const { where, keys, jobs } of prepared) {
    const parents = keys.parentIds.length + keys.parentNodes.reduce((n, p) => n + sizes.get(p)!, 0);
    if (parents > MAX_PARENTS) throw new InvalidRequest(`${where}: DependsOn makes ${parents} parent jobs (parametric nodes count each of their jobs); at most ${MAX_PARENTS} are allowed`);
    rows += parents * jobs.length;
  }
  checkDependencyCount(rows, maxDependencies);
  const nodeJobs = new Map<string, number[]>();
  let next = 0;
  for (const [i, { jobs }] of prepared.entries()) nodeJobs.set(names[i]!, jobs.map(() => next++));
  const jobs = prepared.flatMap(({ keys, jobs }, i) => {
    const parentJobs = keys.parentNodes.flatMap((p) => nodeJobs.get(p)!);
    return jobs.map((checked) => ({ checked, workflow: 0, node: names[i]!, hold: keys.hold, parentIds: keys.parentIds, parentJobs, condition: keys.condition }));
  });
  const nodes = prepared.map(({ keys }, i) => ({ Name: names[i]!, DependsOn: keys.parentNodes, DependencyType: keys.condition }));
  const name = head.name ?? `workflow-${randomBytes(6).toString('hex')}`;
  return { jobs, workflows: [{ name, kind: 'workflow', maxRunning, nodes }], nodeJobs };
}
