/**
 * GET /jobs/{jid}/matching (docs/matching.md, "Why is it waiting"): for a Waiting job, every configured
 * site, Slurm partition and live agent class with what holds the job back there (a requirement, a ban, a
 * running limit, no live resource), its share, and one sentence. Read-only; the route checks visibility.
 */
import { sql } from 'kysely';
import type { Db } from '../../kernel/db/database.ts';
import { NotFound } from '../../kernel/errors.ts';
import { unmetRequirements, type RequirementName, type Requirements, type ResourceDescription } from '../../protocol/requirements.ts';
import { LIMITED_ATTRIBUTES } from '../../protocol/running-limits.ts';
import { activeBans, knownResources, type SiteBan } from '../../sites/index.ts';
import type { JobsConfig } from '../config-schema.ts';
import type { Manifest } from '../manifest.ts';
import { JobStatus } from '../model.ts';
import { requirementsOf } from '../requirements.ts';
import type { MatchingAnswer } from './api-schemas.ts';
import type { RegistryShare } from './group-share.ts';
import { fairShares, HELD_STATUSES } from './shares.ts';

type Verdict = MatchingAnswer['resources'][number];
type HoldBack = Verdict['holdBack'][number];
type Site = JobsConfig['sites'][number];

/** What the explanation reads besides the jobs tables: the sites domain by default, fakes in tests. */
export interface ExplainDeps {
  bans?: (db: Db) => Promise<SiteBan[]>;
  resources?: (db: Db, agentsWithinMs: number) => Promise<ResourceDescription[]>;
  /** The caller may see the job (the route's rule); a job it may not see is answered as missing. */
  visible?: (job: { owner: string; ownerGroup: string }) => boolean;
  now?: number;
  /** The registry's group shares (group-share.ts), which the share verdict reports as the matcher uses them. */
  registryShare?: RegistryShare;
}

const JOB_COLUMNS = ['job_id', 'status', 'site', 'owner', 'owner_group', 'job_type', 'user_priority', 'manifest', 'tq_id'] as const;
type JobRow = { job_id: number; status: string; site: string; owner: string; owner_group: string; job_type: string; user_priority: number; manifest: string; tq_id: number | null };

/** Its task queue's requirements when it has one, else its manifest's (read leniently: sites may have changed). */
async function requirementsOfJob(db: Db, job: JobRow, config: JobsConfig): Promise<Requirements> {
  if (job.tq_id !== null) {
    const tq = await db.selectFrom('task_queues').select('requirements').where('tq_id', '=', job.tq_id).executeTakeFirst();
    if (tq) return { ...(JSON.parse(tq.requirements) as Requirements), jobType: job.job_type };
  }
  const m = JSON.parse(job.manifest) as Manifest;
  // Sites checked at submission may have left the configuration since: still known here.
  const named = [m.Sites, m.BannedSites].flat().filter((s): s is string => typeof s === 'string');
  const known = [...new Set([...config.sites.map((s) => s.name), ...named])];
  try {
    return { ...requirementsOf(m, `job ${job.job_id}`, known), jobType: job.job_type };
  } catch {
    // Accepted at submission, so only a rule tightened since can refuse it: the neutral requirements.
    return { minProcessors: 1, maxProcessors: 1, maxRamMb: 0, gpus: 0, tags: [], platforms: [], cpuTime: 0, sites: m.Sites ?? null, bannedSites: [], jobType: job.job_type };
  }
}

/** Matched, Running and Completing jobs per site with the job's JobType, Owner and OwnerGroup values. */
async function heldCounts(db: Db, job: JobRow, sites: string[]): Promise<Map<string, Record<(typeof LIMITED_ATTRIBUTES)[number], number>>> {
  const out = new Map<string, Record<(typeof LIMITED_ATTRIBUTES)[number], number>>();
  if (sites.length === 0) return out;
  const rows = await db
    .selectFrom('jobs')
    .select([
      'site',
      sql<number>`sum(case when job_type = ${job.job_type} then 1 else 0 end)`.as('job_type'),
      sql<number>`sum(case when owner = ${job.owner} then 1 else 0 end)`.as('owner'),
      sql<number>`sum(case when owner_group = ${job.owner_group} then 1 else 0 end)`.as('owner_group'),
    ])
    .where('status', 'in', [...HELD_STATUSES])
    .where('site', 'in', sites)
    .groupBy('site')
    .execute();
  for (const r of rows) out.set(r.site, { JobType: Number(r.job_type), Owner: Number(r.owner), OwnerGroup: Number(r.owner_group) });
  return out;
}

function limitHoldBacks(site: Site, job: JobRow, held: Map<string, Record<(typeof LIMITED_ATTRIBUTES)[number], number>>): HoldBack[] {
  const value = { JobType: job.job_type, Owner: job.owner, OwnerGroup: job.owner_group };
  const out: HoldBack[] = [];
  for (const attribute of LIMITED_ATTRIBUTES) {
    const limit = site.runningLimits[attribute]?.[value[attribute]];
    if (limit === undefined) continue;
    const n = held.get(site.name)?.[attribute] ?? 0;
    if (n >= limit) {
      out.push({ kind: 'limit', attribute, reason: `${attribute}=${value[attribute]}: ${n} of ${limit} running at ${site.name} (jobs.sites[${site.name}].runningLimits)` });
    }
  }
  return out;
}

function banHoldBacks(bans: SiteBan[], site: string, resource: string): HoldBack[] {
  return bans
    .filter((b) => b.site === site && (b.resource === '' || b.resource === resource))
    .map((b) => ({
      kind: 'ban' as const,
      attribute: b.resource === '' ? 'Site' : 'Resource',
      reason: `${b.resource === '' ? site : `${site}/${b.resource}`} is banned since ${b.since} by ${b.by}: ${b.reason}`,
    }));
}

/** What the job's Sites and BannedSites say of a site, with no resource of it to measure. */
function siteRequirements(r: Requirements, site: string): HoldBack[] {
  const anything: ResourceDescription = { site, resource: '', kind: 'local', cores: Infinity, memoryMb: Infinity, gpus: Infinity, tags: r.tags, platform: r.platforms[0] ?? null, cpuTime: null };
  return unmetRequirements(r, anything).map((u) => ({ kind: 'requirement' as const, attribute: u.attribute, reason: u.reason }));
}

const NO_RESOURCE: Record<Site['type'], (site: string) => string> = {
  local: (s) => `${s} has not described itself yet (its executor publishes it when an instance starts)`,
  slurm: (s) => `${s}'s partitions are not known yet (read from Slurm when an instance starts)`,
  agents: (s) => `no agent of ${s} has asked for work lately`,
};

/** The job's demand on a requirement, as the summary names it. */
function demand(attribute: RequirementName, r: Requirements): string {
  switch (attribute) {
    case 'NumberOfProcessors':
      return `${r.minProcessors} processors`;
    case 'MaxRAM':
      return `${r.maxRamMb} MB of memory`;
    case 'NumberOfGPUs':
      return `${r.gpus} GPUs`;
    case 'Tags':
      return `the tags ${r.tags.join(', ')}`;
    case 'Platform':
      return `a platform compatible with ${r.platforms.join(', ')}`;
    case 'CPUTime':
      return `${r.cpuTime} s of CPU time`;
    case 'Sites':
      return `one of its sites (${(r.sites ?? []).join(', ')})`;
    case 'BannedSites':
      return 'a site it does not ban';
  }
}

function waitingSummary(verdicts: Verdict[], r: Requirements, share: NonNullable<MatchingAnswer['share']>): string {
  const eligible = verdicts.filter((v) => v.eligible);
  if (eligible.length > 0) {
    const sites = new Set(eligible.map((v) => v.site)).size;
    const ratio = share.groupTarget > 0 ? Math.round((share.groupActual / share.groupTarget) * 100) : 0;
    const ahead = share.ahead > 0 ? `, and ${share.ahead} of its owner's jobs go first` : '';
    return `Waiting for a free slot: ${sites} site${sites === 1 ? '' : 's'} could run it; its owner's group is at ${ratio}% of its target share${ahead}`;
  }
  if (verdicts.length === 0) return 'Waiting: no site is configured';
  // A requirement that every resource fails is the answer; else say what holds each back.
  const attributes = verdicts.map((v) => new Set(v.holdBack.filter((h) => h.kind === 'requirement').map((h) => h.attribute)));
  const common = [...attributes[0]!].find((a) => attributes.every((s) => s.has(a))) as RequirementName | undefined;
  if (common) return `Waiting: no resource offers ${demand(common, r)} (${common})`;
  const count = (kind: HoldBack['kind']) => verdicts.filter((v) => v.holdBack.some((h) => h.kind === kind)).length;
  const parts = [
    [count('requirement'), 'lack what it requires'],
    [count('ban'), 'banned'],
    [count('limit'), 'at a running limit'],
    [count('status'), 'without a live resource'],
  ]
    .filter(([n]) => Number(n) > 0)
    .map(([n, what]) => `${n} ${what}`);
  return `Waiting: no resource can run it now (of ${verdicts.length}: ${parts.join('; ')})`;
}

/**
 * The owner's Waiting jobs (in the same group) that go before this one: higher Priority, or as high and
 * older. Reads each of the owner's Waiting rows (`jobs_owner_status_id`, then the table for the priority):
 * 1–2 s for an owner with 80,000 of a million on a loaded 2-core machine. An index on (owner, status,
 * user_priority, job_id) would make it an index-only range count.
 */
async function aheadOf(db: Db, job: JobRow): Promise<number> {
  const row = await db
    .selectFrom('jobs')
    .select(sql<number>`count(*)`.as('n'))
    .where('owner', '=', job.owner)
    .where('status', '=', JobStatus.Waiting)
    .where('owner_group', '=', job.owner_group)
    .where((eb) => eb.or([eb('user_priority', '>', job.user_priority), eb.and([eb('user_priority', '=', job.user_priority), eb('job_id', '<', job.job_id)])]))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Why job `jobId` waits, or that it does not.
 * @throws NotFound when there is no such job (or `deps.visible` says the caller may not see it).
 */
export async function explainMatching(db: Db, config: JobsConfig, jobId: number, deps: ExplainDeps = {}): Promise<MatchingAnswer> {
  const job = (await db.selectFrom('jobs').select([...JOB_COLUMNS]).where('job_id', '=', jobId).executeTakeFirst()) as JobRow | undefined;
  if (!job || (deps.visible && !deps.visible({ owner: job.owner, ownerGroup: job.owner_group }))) throw new NotFound(`no job ${jobId}`);
  const requirements = await requirementsOfJob(db, job, config);
  const base = { JobID: Number(job.job_id), Status: job.status, requirements: requirements as unknown as Record<string, unknown> };
  if (job.status !== JobStatus.Waiting) {
    const where = job.site && job.site !== 'ANY' && job.site !== 'Multiple' ? ` at ${job.site}` : '';
    return { ...base, TaskQueueID: null, resources: [], share: null, summary: `Not waiting: ${job.status}${where}` };
  }

  const agentSites = config.sites.filter((s) => s.type === 'agents');
  const window = Math.max(0, ...agentSites.map((s) => s.stalledAfterMs));
  const [bans, described, shares, ahead] = await Promise.all([
    (deps.bans ?? activeBans)(db),
    (deps.resources ?? knownResources)(db, window),
    fairShares(db, config, { now: deps.now, registryShare: deps.registryShare }),
    aheadOf(db, job),
  ]);
  const limited = config.sites.filter((s) => Object.keys(s.runningLimits).length > 0).map((s) => s.name);
  const held = await heldCounts(db, job, limited);

  const verdicts: Verdict[] = [];
  for (const site of config.sites) {
    const limits = limitHoldBacks(site, job, held);
    const resources = described.filter((d) => d.site === site.name && d.kind === site.type);
    if (resources.length === 0) {
      const holdBack: HoldBack[] = [...siteRequirements(requirements, site.name), { kind: 'status', attribute: 'Site', reason: NO_RESOURCE[site.type](site.name) }, ...banHoldBacks(bans, site.name, ''), ...limits];
      verdicts.push({ site: site.name, resource: '', kind: site.type, eligible: false, holdBack });
      continue;
    }
    for (const d of resources) {
      const holdBack: HoldBack[] = [
        ...unmetRequirements(requirements, d).map((u) => ({ kind: 'requirement' as const, attribute: u.attribute, reason: u.reason })),
        ...banHoldBacks(bans, site.name, d.resource),
        ...limits,
      ];
      verdicts.push({ site: site.name, resource: d.resource, kind: site.type, eligible: holdBack.length === 0, holdBack });
    }
  }

  const group = shares.groups.find((g) => g.group === job.owner_group);
  const user = group?.users.find((u) => u.user === job.owner);
  const share = {
    group: job.owner_group,
    user: job.owner,
    groupTarget: group?.target ?? 0,
    groupActual: group?.actual ?? 0,
    userTarget: user?.target ?? 0,
    userActual: user?.actual ?? 0,
    ahead,
  };
  return { ...base, TaskQueueID: job.tq_id === null ? null : Number(job.tq_id), resources: verdicts, share, summary: waitingSummary(verdicts, requirements, share) };
}
