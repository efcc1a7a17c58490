/**
 * A Slurm site's partitions as matching resources (docs/matching.md): what `sinfo` says of each (CPUs and
 * memory per node, GPUs of its GRES, the most CPUs a job may have on a node, the time limit), and the
 * offers a site makes of those its configuration names.
 */
import type { ResourceDescription, ResourceOffer } from '../protocol/requirements.ts';
import { REQUIREMENT_LIMITS } from '../protocol/requirements.ts';

/** One partition as `sinfo` describes it: the largest node of each kind of its nodes. */
export interface SlurmPartition {
  name: string;
  /** Slurm's default partition (sbatch without --partition). */
  isDefault: boolean;
  up: boolean;
  cpus: number;
  memoryMb: number;
  gpus: number;
  /** Its time limit in seconds; null for none. */
  timeLimit: number | null;
}

/** `sinfo` fields, each followed by `|` (the `-O` form, whose width 0 means as wide as the value). */
export const SINFO_ARGS = ['--noheader', '--Format=Partition:0|,Available:0|,CPUs:0|,Memory:0|,Gres:0|,Time:0|,MaxCPUsPerNode:0|'];

/** A count as sinfo prints it: `24105`, `250+` (the least of several nodes), `UNLIMITED`; undefined when none. */
function count(text: string): number | undefined {
  const m = /^(\d+)/.exec(text.trim());
  return m ? Number(m[1]) : undefined;
}

/**
 * A Slurm time limit in seconds: `infinite`/`UNLIMITED` (null), `days-hours:minutes:seconds`,
 * `hours:minutes:seconds`, `minutes:seconds` or `minutes`; undefined when it is none of these (`n/a`).
 */
export function parseSlurmTime(text: string): number | null | undefined {
  const t = text.trim();
  if (/^(infinite|unlimited)$/i.test(t)) return null;
  const m = /^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$/.exec(t);
  if (!m) return undefined;
  const [days, a, b, c] = [m[1], m[2], m[3], m[4]].map((x) => (x === undefined ? undefined : Number(x)));
  // Slurm: `M`, `M:S`, `H:M:S`, and with days `D-H`, `D-H:M`, `D-H:M:S`.
  let seconds: number;
  if (days !== undefined) seconds = days * 86400 + a! * 3600 + (b ?? 0) * 60 + (c ?? 0);
  else if (c !== undefined) seconds = a! * 3600 + b! * 60 + c;
  else if (b !== undefined) seconds = a! * 60 + b;
  else seconds = a! * 60;
  return seconds;
}

/** GPUs in a GRES list: `gpu:2`, `gpu:tesla:2(S:0-1)`, `gpu:a100:4,mps:400`; 0 for `(null)`. */
export function gresGpus(gres: string): number {
  let gpus = 0;
  // Commas also separate socket ranges inside parentheses: drop those first.
  for (const item of gres.replace(/\([^)]*\)/g, '').split(',')) {
    const parts = item.trim().split(':');
    if (parts[0] !== 'gpu' || parts.length < 2) continue;
    const n = Number(parts[parts.length - 1]);
    gpus += Number.isInteger(n) ? n : 0;
  }
  return gpus;
}

/**
 * Parses the output of `sinfo` with {@link SINFO_ARGS}. A partition listed on several lines (nodes of
 * different kinds or states) keeps the largest of each: a job fits if it fits one kind of node.
 */
export function parseSinfo(out: string): SlurmPartition[] {
  const byName = new Map<string, SlurmPartition>();
  for (const line of out.split(/\r?\n/)) {
    const fields = line.split('|').map((f) => f.trim());
    if (fields.length < 7 || !fields[0]) continue;
    const [rawName, avail, cpusText, memText, gres, time, maxCpusText] = fields as [string, string, string, string, string, string, string];
    const isDefault = rawName.endsWith('*');
    const name = isDefault ? rawName.slice(0, -1) : rawName;
    const maxCpus = count(maxCpusText);
    const cpus = Math.min(count(cpusText) ?? 0, maxCpus ?? Infinity);
    const timeLimit = parseSlurmTime(time);
    const seen: SlurmPartition = { name, isDefault, up: avail === 'up', cpus, memoryMb: count(memText) ?? 0, gpus: gresGpus(gres), timeLimit: timeLimit === undefined ? null : timeLimit };
    const was = byName.get(name);
    byName.set(
      name,
      was
        ? { ...was, cpus: Math.max(was.cpus, seen.cpus), memoryMb: Math.max(was.memoryMb, seen.memoryMb), gpus: Math.max(was.gpus, seen.gpus) }
        : seen,
    );
  }
  return [...byName.values()];
}

/** What a site's nodes are beyond what Slurm says. */
export interface SiteTraits {
  site: string;
  tags: string[];
  platform: string | null;
}

/**
 * The partitions a site uses, in its configured order (`partition: a,b`), else Slurm's default one. One
 * named but not in `known` (not read yet, Slurm unreachable, no such partition) is described without
 * limits, so that `sbatch` is asked and says what is wrong, as before partitions were read.
 */
export function sitePartitions(configured: string | undefined, known: readonly SlurmPartition[] | undefined, traits: SiteTraits): ResourceDescription[] {
  const names = configured ? [...new Set(configured.split(',').map((p) => p.trim()).filter(Boolean))] : undefined;
  const describe = (resource: string, p: SlurmPartition | undefined): ResourceDescription => ({
    site: traits.site,
    resource,
    kind: 'slurm',
    cores: p ? p.cpus : REQUIREMENT_LIMITS.processors,
    memoryMb: p ? p.memoryMb : REQUIREMENT_LIMITS.maxRamMb,
    gpus: p ? p.gpus : REQUIREMENT_LIMITS.gpus,
    tags: [...traits.tags],
    platform: traits.platform,
    cpuTime: p ? p.timeLimit : null,
  });
  if (!names) {
    const fallback = known?.find((p) => p.isDefault);
    // No partition named: Slurm's default, under its own name once known ('' until then: sbatch picks it).
    return [describe(fallback?.name ?? '', fallback)];
  }
  return names.map((name) => describe(name, known?.find((p) => p.name === name)));
}

/** Offers of the partitions that are up (a partition that is down takes no job: it would only queue there). */
export function partitionOffers(descriptions: readonly ResourceDescription[], known: readonly SlurmPartition[] | undefined): ResourceOffer[] {
  return descriptions.filter((d) => known?.find((p) => p.name === d.resource)?.up !== false).map((d) => ({ ...d, consumable: false }));
}
