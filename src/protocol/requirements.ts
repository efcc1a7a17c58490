/**
 * What a job needs of the resource it runs on (DIRAC's names: NumberOfProcessors, MaxRAM, NumberOfGPUs,
 * Tags, Platform, CPUTime, Sites, BannedSites), what a resource offers, and whether one satisfies the
 * other. Shared by the service (matching, explaining why a job waits) and the worker-node agent (which
 * describes its node), so it imports nothing of either.
 */

/** A job's requirements, normalised: absent keys take their neutral value, lists are sorted and unique. */
export interface Requirements {
  /** Fewest processors (cores) the job can run with: NumberOfProcessors, or MinNumberOfProcessors; 1 by default. */
  minProcessors: number;
  /** Most it can use: NumberOfProcessors, or MaxNumberOfProcessors; minProcessors when absent. */
  maxProcessors: number;
  /** MaxRAM, in MB; 0 when not asked. */
  maxRamMb: number;
  /** NumberOfGPUs; 0 when not asked. */
  gpus: number;
  /** Tags: every one must be offered. */
  tags: string[];
  /** Platform: the resource's platform must be compatible with one of them; empty for any. */
  platforms: string[];
  /** CPUTime in seconds the resource must offer at least; 0 when not asked. */
  cpuTime: number;
  /** Sites the job may run at; null for any. */
  sites: string[] | null;
  /** Sites it must not run at. */
  bannedSites: string[];
  /** The job's JobType: running limits are set per type (it is part of a task queue's key). */
  jobType: string;
}

/** The requirement names a reason may name (the manifest's keys). */
export type RequirementName = 'NumberOfProcessors' | 'MaxRAM' | 'NumberOfGPUs' | 'Tags' | 'Platform' | 'CPUTime' | 'Sites' | 'BannedSites';

/** What a resource is: a local site, a Slurm partition, a class of live agents. */
export interface ResourceDescription {
  site: string;
  /** The partition, the agent's resource name (its node, by default); '' for a site that is one resource. */
  resource: string;
  kind: 'local' | 'slurm' | 'agents';
  /** Processors (cores) one job may get here. */
  cores: number;
  /** Memory one job may get, in MB. */
  memoryMb: number;
  gpus: number;
  tags: string[];
  /** Its platform (`Linux_x86_64_glibc-2.36`), null when unknown: then only jobs that name none run here. */
  platform: string | null;
  /** The longest a job may run here, in seconds (a partition's time limit, an agent's time left); null for no limit. */
  cpuTime: number | null;
}

/**
 * A resource asking for work now. When `consumable`, every job matched takes the processors, memory and
 * GPUs it gets out of the offer (a local site's free cores, a multi-slot agent); otherwise every job is
 * measured against the whole (a batch partition, which queues what it cannot start yet).
 */
export interface ResourceOffer extends ResourceDescription {
  consumable: boolean;
}

/** One requirement a resource does not meet, named as the manifest names it, with a sentence saying why. */
export interface Unmet {
  attribute: RequirementName;
  reason: string;
}

/** Most processors, MB of memory and GPUs a job may ask for: far beyond any machine, they bound hostile input. */
export const REQUIREMENT_LIMITS = { processors: 65536, maxRamMb: 1 << 30, gpus: 1024, tags: 64, platforms: 64 } as const;

/** A tag: a word of letters, digits and `_ . : + -` (`GPU`, `cvmfs:lhcb`, `8Processors`). */
export const TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}$/;
/** A platform name: DIRAC's `Linux_x86_64_glibc-2.17`, or another word of letters, digits and `_ . + -`. */
export const PLATFORM_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$/;
/** DIRAC's platform form: `<OS>_<architecture>_glibc-<major>.<minor>`; newer glibc runs what older built. */
const GLIBC_PLATFORM = /^(.+)_glibc-(\d+)\.(\d+)$/;

/**
 * Whether a resource of `offered` platform runs a job built for `asked`: the same name, or the same OS and
 * architecture with a glibc at least as new (glibc keeps old binaries working, not new ones on old).
 */
export function platformCompatible(asked: string, offered: string): boolean {
  if (asked === offered) return true;
  const a = GLIBC_PLATFORM.exec(asked);
  const o = GLIBC_PLATFORM.exec(offered);
  if (!a || !o || a[1] !== o[1]) return false;
  const [am, an, om, on] = [a[2], a[3], o[2], o[3]].map(Number) as [number, number, number, number];
  return om > am || (om === am && on >= an);
}

/**
 * The processors a job gets from `available` cores: as many as it can use, at least its minimum;
 * undefined when fewer than its minimum are available.
 */
export function processorsFor(req: Pick<Requirements, 'minProcessors' | 'maxProcessors'>, available: number): number | undefined {
  if (available < req.minProcessors) return undefined;
  return Math.min(req.maxProcessors, available);
}

const list = (xs: readonly string[]) => xs.join(', ');

/**
 * Every requirement of `req` that `resource` does not meet (empty: it may run there). Capacity is the
 * resource's as described: for an offer, what it has free now.
 */
export function unmetRequirements(req: Requirements, resource: ResourceDescription): Unmet[] {
  const out: Unmet[] = [];
  const where = resource.resource ? `${resource.site}/${resource.resource}` : resource.site;
  if (req.sites !== null && !req.sites.includes(resource.site)) out.push({ attribute: 'Sites', reason: `the job may run only at ${list(req.sites)}` });
  if (req.bannedSites.includes(resource.site)) out.push({ attribute: 'BannedSites', reason: `the job bans site ${resource.site}` });
  if (resource.cores < req.minProcessors) {
    out.push({ attribute: 'NumberOfProcessors', reason: `the job needs ${req.minProcessors} processors; ${where} offers ${resource.cores}` });
  }
  if (req.maxRamMb > resource.memoryMb) out.push({ attribute: 'MaxRAM', reason: `the job needs ${req.maxRamMb} MB of memory; ${where} offers ${resource.memoryMb} MB` });
  if (req.gpus > resource.gpus) out.push({ attribute: 'NumberOfGPUs', reason: `the job needs ${req.gpus} GPUs; ${where} offers ${resource.gpus}` });
  const missing = req.tags.filter((t) => !resource.tags.includes(t));
  if (missing.length > 0) out.push({ attribute: 'Tags', reason: `${where} lacks the tag${missing.length > 1 ? 's' : ''} ${list(missing)}` });
  if (req.platforms.length > 0 && !(resource.platform !== null && req.platforms.some((p) => platformCompatible(p, resource.platform!)))) {
    out.push({ attribute: 'Platform', reason: `the job runs on ${list(req.platforms)}; ${where} is ${resource.platform ?? 'of an unknown platform'}` });
  }
  if (req.cpuTime > 0 && resource.cpuTime !== null && resource.cpuTime < req.cpuTime) {
    out.push({ attribute: 'CPUTime', reason: `the job needs ${req.cpuTime} s; ${where} offers ${resource.cpuTime} s` });
  }
  return out;
}

/**
 * The identity of a task queue's requirements: equal requirements give equal keys (lists are sorted
 * already), so jobs that ask for the same thing share one queue.
 */
export function requirementsKey(req: Requirements): string {
  return JSON.stringify([req.minProcessors, req.maxProcessors, req.maxRamMb, req.gpus, req.tags, req.platforms, req.cpuTime, req.sites, req.bannedSites, req.jobType]);
}
