/**
 * A manifest's requirements (NumberOfProcessors, MaxRAM, NumberOfGPUs, Tags, Platform, CPUTime, Sites,
 * BannedSites), checked at submission with messages that name the key, and normalised for matching.
 */
import { InvalidRequest } from '../kernel/errors.ts';
import type { Manifest } from '../protocol/job-manifest.ts';
import { PLATFORM_PATTERN, REQUIREMENT_LIMITS, TAG_PATTERN, type Requirements } from '../protocol/requirements.ts';

export type { Requirements } from '../protocol/requirements.ts';

function positiveInteger(where: string, m: Manifest, key: string, max: number, allowZero = false): number | undefined {
  const v = m[key];
  if (v === undefined) return undefined;
  const min = allowZero ? 0 : 1;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new InvalidRequest(`${where}: ${key} must be an integer from ${min} to ${max}`);
  }
  return v;
}

/** A list key given as one string or an array of strings; sorted and without repeats. */
function words(where: string, m: Manifest, key: string, pattern: RegExp, what: string, max: number): string[] {
  const v = m[key];
  if (v === undefined) return [];
  const items = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(items) || !items.every((s) => typeof s === 'string')) throw new InvalidRequest(`${where}: ${key} must be a string or an array of strings`);
  if (items.length > max) throw new InvalidRequest(`${where}: ${key} has ${items.length} entries; at most ${max} are allowed`);
  const bad = items.find((s) => !pattern.test(s));
  if (bad !== undefined) throw new InvalidRequest(`${where}: ${key} ${JSON.stringify(bad)} is not ${what}`);
  return [...new Set(items)].sort();
}

/**
 * The requirements of a checked manifest (its Sites already checked against `knownSites`).
 * @throws InvalidRequest naming the key: a bad value, an impossible range, sites that leave none.
 */
export function requirementsOf(m: Manifest, where: string, knownSites: readonly string[]): Requirements {
  if (m.Requirements !== undefined) {
    throw new InvalidRequest(`${where}: Requirements expressions are not evaluated; say what the job needs with NumberOfProcessors, MaxRAM, NumberOfGPUs, Tags, Platform, CPUTime, Sites and BannedSites`);
  }
  const max = REQUIREMENT_LIMITS;
  const exact = positiveInteger(where, m, 'NumberOfProcessors', max.processors);
  const min = positiveInteger(where, m, 'MinNumberOfProcessors', max.processors);
  const most = positiveInteger(where, m, 'MaxNumberOfProcessors', max.processors);
  if (exact !== undefined && (min !== undefined || most !== undefined)) {
    throw new InvalidRequest(`${where}: give NumberOfProcessors, or MinNumberOfProcessors and MaxNumberOfProcessors, not both`);
  }
  const minProcessors = exact ?? min ?? 1;
  const maxProcessors = exact ?? most ?? minProcessors;
  if (maxProcessors < minProcessors) {
    throw new InvalidRequest(`${where}: MaxNumberOfProcessors (${maxProcessors}) is below MinNumberOfProcessors (${minProcessors})`);
  }
  const bannedSites = words(where, m, 'BannedSites', /^[A-Za-z0-9_.-]{1,64}$/, 'a site name', 1000);
  const unknown = bannedSites.find((s) => !knownSites.includes(s));
  if (unknown !== undefined) throw new InvalidRequest(`${where}: BannedSites names the unknown site '${unknown}' (known: ${knownSites.join(', ')})`);
  const sites = m.Sites === undefined ? null : [...new Set(m.Sites)].sort();
  const left = (sites ?? knownSites).filter((s) => !bannedSites.includes(s));
  if (bannedSites.length > 0 && left.length === 0) throw new InvalidRequest(`${where}: BannedSites bans every site the job may run at (${(sites ?? knownSites).join(', ')})`);
  return {
    minProcessors,
    maxProcessors,
    maxRamMb: positiveInteger(where, m, 'MaxRAM', max.maxRamMb) ?? 0,
    gpus: positiveInteger(where, m, 'NumberOfGPUs', max.gpus, true) ?? 0,
    tags: words(where, m, 'Tags', TAG_PATTERN, 'a tag (letters, digits and _ . : + -, at most 64)', max.tags),
    platforms: words(where, m, 'Platform', PLATFORM_PATTERN, 'a platform name (such as Linux_x86_64_glibc-2.17: letters, digits and _ . + -, at most 64)', max.platforms).filter((p) => p !== 'ANY'),
    cpuTime: typeof m.CPUTime === 'number' ? m.CPUTime : 0,
    sites,
    bannedSites,
    jobType: m.JobType ?? 'User',
  };
}
