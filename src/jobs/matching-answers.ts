/**
 * The answers of GET /jobs/shares and GET /jobs/{jid}/matching. STUB (issue 34): minimal correct values
 * until matching's own explanation replaces these bodies: the shares from the configured group shares and
 * the jobs' counts, and per site only what a resource's description does not decide (Sites, BannedSites).
 */
import { sql } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { InvalidRequest } from '../kernel/errors.ts';
import { unmetRequirements } from '../protocol/requirements.ts';
import type { JobsConfig } from './config-schema.ts';
import type { MatchingAnswer, SharesAnswer } from './matching/api-schemas.ts';
import { readUsage } from './matching/usage.ts';
import type { Manifest } from './manifest.ts';
import { JobStatus } from './model.ts';
import { requirementsOf, type Requirements } from './requirements.ts';
import type { JobRow } from './store.ts';

const HELD = [JobStatus.Matched, JobStatus.Running, JobStatus.Completing];

/** Every group's and user's target and actual share, furthest below its target first. */
export async function fairShares(db: Db, config: JobsConfig): Promise<SharesAnswer> {
  const rows = await db
    .selectFrom('jobs')
    .select(['owner_group', 'owner', sql<number>`sum(case when status = ${JobStatus.Waiting} then 1 else 0 end)`.as('waiting'), sql<number>`sum(case when status <> ${JobStatus.Waiting} then 1 else 0 end)`.as('running')])
    .where('status', 'in', [JobStatus.Waiting, ...HELD])
    .groupBy(['owner_group', 'owner'])
    .execute();
  const usage = await readUsage(db, config.fairShare.halfLifeMs);
  const used = (group: string, user: string) => usage.find((u) => u.group === group && u.user === user)?.usage ?? 0;
  const groups = new Map<string, { user: string; waiting: number; running: number }[]>();
  for (const r of rows) groups.set(r.owner_group, [...(groups.get(r.owner_group) ?? []), { user: r.owner, waiting: Number(r.waiting), running: Number(r.running) }]);
  for (const u of usage) if (!groups.has(u.group)) groups.set(u.group, []);
  const shareOf = (g: string) => config.fairShare.shares[g] ?? 1;
  const totalShare = [...groups.keys()].reduce((s, g) => s + shareOf(g), 0);
  const totalUsage = [...groups.keys()].reduce((s, g) => s + used(g, ''), 0);
  const fraction = (part: number, whole: number) => (whole > 0 ? part / whole : 0);
  const answer = [...groups].map(([group, users]) => {
    const groupUsage = used(group, '');
    const userUsage = users.reduce((s, u) => s + used(group, u.user), 0);
    return {
      group,
      share: shareOf(group),
      target: fraction(shareOf(group), totalShare),
      actual: fraction(groupUsage, totalUsage),
      usage: groupUsage,
      waiting: users.reduce((s, u) => s + u.waiting, 0),
      running: users.reduce((s, u) => s + u.running, 0),
      users: users.map((u) => ({ user: u.user, share: 1, target: 1 / users.length, actual: fraction(used(group, u.user), userUsage), usage: used(group, u.user), waiting: u.waiting, running: u.running })),
    };
  });
  answer.sort((a, b) => a.actual - a.target - (b.actual - b.target) || a.group.localeCompare(b.group));
  return { halfLifeSeconds: config.fairShare.halfLifeMs / 1000, groups: answer };
}

/** The requirements of a stored manifest; a manifest stored before they were checked reads as asking nothing. */
function storedRequirements(manifest: Manifest, knownSites: readonly string[]): Requirements | undefined {
  try {
    // Sites it names that have left the configuration since are known to it still.
    const banned = manifest.BannedSites === undefined ? [] : [manifest.BannedSites].flat();
    return requirementsOf(manifest, 'manifest', [...knownSites, ...banned]);
  } catch (err) {
    if (err instanceof InvalidRequest) return undefined;
    throw err;
  }
}

/** For every configured site, whether `job` could go there, and what holds it back. */
export async function explainMatching(_db: Db, config: JobsConfig, job: JobRow): Promise<MatchingAnswer> {
  const req = storedRequirements(JSON.parse(job.manifest) as Manifest, config.sites.map((s) => s.name));
  const waiting = job.status === JobStatus.Waiting;
  const resources = config.sites.map((site) => {
    const kind = site.type === 'agents' ? ('agents' as const) : site.type === 'slurm' ? ('slurm' as const) : ('local' as const);
    // Measured against a resource that offers exactly what the job asks: only where it may run can fail.
    const unmet = req ? unmetRequirements(req, { site: site.name, resource: '', kind, cores: req.maxProcessors, memoryMb: req.maxRamMb, gpus: req.gpus, tags: req.tags, platform: req.platforms[0] ?? null, cpuTime: null }) : [];
    const holdBack = unmet.map((u) => ({ kind: 'requirement' as const, attribute: u.attribute, reason: u.reason }));
    return { site: site.name, resource: '', kind, eligible: waiting && holdBack.length === 0, holdBack };
  });
  const eligible = resources.filter((r) => r.eligible).map((r) => r.site);
  const summary = !waiting
    ? `Job ${job.job_id} is ${job.status}: it is not waiting to be matched.`
    : eligible.length === 0
      ? `Job ${job.job_id} can run at no configured site: ${resources.flatMap((r) => r.holdBack.map((h) => `${r.site}: ${h.reason} (${h.attribute})`)).join('; ')}.`
      : `Job ${job.job_id} waits for a free slot at ${eligible.join(', ')}.`;
  return {
    JobID: job.job_id,
    Status: job.status,
    TaskQueueID: job.tq_id,
    requirements: (req ?? {}) as Record<string, unknown>,
    resources,
    share: null,
    summary,
  };
}
