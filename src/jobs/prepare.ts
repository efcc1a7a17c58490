/**
 * A submission's manifests, checked and expanded before anything is stored: each as a template first, what
 * its parameters make measured (jobs.maxParametricJobs, jobs.maxSubmissionBytes) before it is expanded, then
 * every job (all or nothing). A workflow's nodes count together, as the manifests of a bulk submission do.
 */
import { InvalidRequest } from '../kernel/errors.ts';
import type { JobsConfig } from './config-schema.ts';
import { checkFlowKeys, type FlowKeys } from './flow/manifest-keys.ts';
import { checkManifest, checkManifestTemplate, type CheckedManifest, type Manifest } from './manifest.ts';
import { planParametric, type ParametricPlan } from './parametric.ts';

/** One manifest of a submission: its workflow keys and the jobs it makes (one, or one per parameter). */
export interface PreparedManifest {
  where: string;
  template: Manifest;
  keys: FlowKeys;
  parametric: boolean;
  jobs: CheckedManifest[];
}

/** @throws InvalidRequest naming the manifest and key at fault, or the limit reached */
export function prepareManifests(
  manifests: readonly unknown[],
  config: JobsConfig,
  sites: readonly string[],
  fileNames: readonly string[],
  workflow: boolean,
  whereOf: (i: number) => string = (i) => (manifests.length > 1 ? `manifest[${i}]` : 'manifest'),
): PreparedManifest[] {
  const limit = config.maxParametricJobs;
  const plans: { plan: ParametricPlan; where: string; template: Manifest; keys: FlowKeys; parametric: boolean }[] = [];
  let count = 0;
  let bytes = 0;
  manifests.forEach((m, i) => {
    const where = whereOf(i);
    // Checked as a template first: what no parameter can change is refused before a single copy is made.
    checkManifestTemplate(m, where, config);
    const parametric = 'Parameters' in m;
    const keys = checkFlowKeys(m, where, { workflow, parametric });
    const plan = planParametric(m, where, limit);
    count += plan.count;
    bytes += plan.bytes;
    if (count > limit) throw new InvalidRequest(`the submission makes ${count} or more jobs; at most ${limit} are allowed (jobs.maxParametricJobs)`);
    plans.push({ plan, where, template: m, keys, parametric });
  });
  if (bytes > config.maxSubmissionBytes) {
    throw new InvalidRequest(
      `the submission's parametric jobs would take about ${bytes} bytes of manifests once their parameters are filled in; at most ${config.maxSubmissionBytes} are allowed (jobs.maxSubmissionBytes)`,
    );
  }
  return plans.map(({ plan, where, template, keys, parametric }) => {
    const expanded = plan.expand();
    const jobs = expanded.map((manifest, n) => checkManifest(manifest, expanded.length > 1 ? `${where} (parameter ${n})` : where, sites, fileNames, config));
    return { where, template, keys, parametric, jobs };
  });
}
