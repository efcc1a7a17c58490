/**
 * The submission-side workflow keys of a manifest (docs/workflows.md "Manifest keys"): DependsOn,
 * DependencyType, NodeName, Hold and MaxRunning, checked with messages that name the key. JSON and JDL give
 * the same shapes (parseJdl: `DependsOn = {12, 13};` is [12, 13], `Hold = true;` is true).
 */
import { InvalidRequest } from '../../kernel/errors.ts';
import type { Manifest } from '../../protocol/job-manifest.ts';

export const CONDITIONS = ['afterok', 'afterany', 'afternotok'] as const;
export type DependencyCondition = (typeof CONDITIONS)[number];

/** The most jobs or nodes one DependsOn may name. */
export const MAX_PARENTS = 1000;
/** A node's name: letters, digits, `_ . -`; as wide as the workflow_node column. */
export const NODE_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const JOB_ID = /^[1-9][0-9]{0,15}$/;
/** A name DependsOn would read as a job id (or refuse as one): no node may have it. */
export const ALL_DIGITS = /^[0-9]+$/;
/** Slurm's form: `afterok:12:13`. */
const SLURM = /^(afterok|afterany|afternotok):([0-9:]+)$/;
const INT32_MAX = 2147483647;

/** Where the manifest is submitted: node names and NodeName belong to POST /workflows. */
export interface FlowContext {
  workflow: boolean;
  parametric: boolean;
}

/** What the keys say about one manifest (every job a parametric manifest makes shares it). */
export interface FlowKeys {
  /** Parents by job id, distinct, in the order given. */
  parentIds: number[];
  /** Parents by node name (POST /workflows only), distinct. */
  parentNodes: string[];
  condition: DependencyCondition;
  hold: boolean;
  nodeName: string | undefined;
  maxRunning: number | undefined;
}

/** Whether a manifest uses none of the keys that make its jobs start Received (the plain, fast path). */
export function isPlain(keys: FlowKeys): boolean {
  return keys.parentIds.length === 0 && keys.parentNodes.length === 0 && !keys.hold && keys.maxRunning === undefined;
}

function jobId(v: number, where: string): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new InvalidRequest(`${where}: DependsOn: ${v} is not a job id (a positive integer)`);
  return v;
}

function dependsOn(raw: unknown, where: string, ctx: FlowContext): { ids: number[]; nodes: string[]; slurm: DependencyCondition | undefined } {
  const ids = new Set<number>();
  const nodes = new Set<string>();
  let slurm: DependencyCondition | undefined;
  const items: unknown[] = Array.isArray(raw) ? raw : [raw];
  if (Array.isArray(raw) && raw.length === 0) throw new InvalidRequest(`${where}: DependsOn is an empty list; leave it out for a job without parents`);
  if (items.length > MAX_PARENTS) throw new InvalidRequest(`${where}: DependsOn names ${items.length} jobs; at most ${MAX_PARENTS} are allowed`);
  for (const item of items) {
    if (typeof item === 'number') {
      ids.add(jobId(item, where));
      continue;
    }
    if (typeof item !== 'string') throw new InvalidRequest(`${where}: DependsOn must be a job id, a list of job ids${ctx.workflow ? ' or node names' : ''}, or Slurm's "afterok:12:13"`);
    const form = SLURM.exec(item);
    if (form) {
      if (Array.isArray(raw)) throw new InvalidRequest(`${where}: DependsOn: Slurm's form "${item}" stands alone, not in a list`);
      slurm = form[1] as DependencyCondition;
      const parts = form[2]!.split(':');
      if (parts.length > MAX_PARENTS) throw new InvalidRequest(`${where}: DependsOn names ${parts.length} jobs; at most ${MAX_PARENTS} are allowed`);
      for (const p of parts) {
        if (!JOB_ID.test(p)) throw new InvalidRequest(`${where}: DependsOn: "${item}" must be ${slurm}:<job id>[:<job id>…]`);
        ids.add(jobId(Number(p), where));
      }
    } else if (JOB_ID.test(item)) ids.add(jobId(Number(item), where));
    else if (!ctx.workflow) throw new InvalidRequest(`${where}: DependsOn: "${item}" is not a job id; node names are for POST /workflows`);
    else if (!NODE_NAME.test(item)) throw new InvalidRequest(`${where}: DependsOn: "${item}" is neither a job id nor a node name (letters, digits, _ . -, at most 128)`);
    else nodes.add(item);
  }
  return { ids: [...ids], nodes: [...nodes], slurm };
}

/**
 * Checks DependsOn, DependencyType, NodeName, Hold and MaxRunning of one manifest (a template, before any
 * parametric expansion). @throws InvalidRequest naming the key
 */
export function checkFlowKeys(m: Manifest, where: string, ctx: FlowContext): FlowKeys {
  const deps = m.DependsOn === undefined ? { ids: [], nodes: [], slurm: undefined } : dependsOn(m.DependsOn, where, ctx);
  let condition: DependencyCondition = deps.slurm ?? 'afterok';
  if (m.DependencyType !== undefined) {
    if (typeof m.DependencyType !== 'string' || !(CONDITIONS as readonly string[]).includes(m.DependencyType)) {
      throw new InvalidRequest(`${where}: DependencyType must be one of ${CONDITIONS.join(', ')}`);
    }
    if (deps.slurm !== undefined && deps.slurm !== m.DependencyType) {
      throw new InvalidRequest(`${where}: DependencyType is ${m.DependencyType} but DependsOn says ${deps.slurm}`);
    }
    condition = m.DependencyType;
  }
  if (m.Hold !== undefined && typeof m.Hold !== 'boolean') throw new InvalidRequest(`${where}: Hold must be true or false`);
  let nodeName: string | undefined;
  if (m.NodeName !== undefined) {
    if (!ctx.workflow) throw new InvalidRequest(`${where}: NodeName names a node of a workflow: submit it with POST /workflows`);
    if (typeof m.NodeName !== 'string' || !NODE_NAME.test(m.NodeName)) throw new InvalidRequest(`${where}: NodeName must be letters, digits, _ . - (1 to 128 characters)`);
    if (ALL_DIGITS.test(m.NodeName)) throw new InvalidRequest(`${where}: NodeName '${m.NodeName}' is only digits, which DependsOn reads as a job id: give it a letter or _ . -`);
    nodeName = m.NodeName;
  }
  let maxRunning: number | undefined;
  if (m.MaxRunning !== undefined) {
    if (typeof m.MaxRunning !== 'number' || !Number.isInteger(m.MaxRunning) || m.MaxRunning < 1 || m.MaxRunning > INT32_MAX) {
      throw new InvalidRequest(`${where}: MaxRunning must be an integer from 1 to ${INT32_MAX}`);
    }
    if (!ctx.parametric && !ctx.workflow) {
      throw new InvalidRequest(`${where}: MaxRunning caps a parametric set or a workflow; this manifest is neither (give it Parameters, or submit it with POST /workflows)`);
    }
    maxRunning = m.MaxRunning;
  }
  return { parentIds: deps.ids, parentNodes: deps.nodes, condition, hold: m.Hold === true, nodeName, maxRunning };
}
