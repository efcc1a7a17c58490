/**
 * Parametric jobs with DIRAC's semantics: one manifest with `Parameters` becomes one job per value.
 *
 * - `Parameters = {"a","b"}` is the value set A; `Parameters = 3` with `ParameterStart`, `ParameterStep`
 *   and `ParameterFactor` (defaults 1, 0, 1) computes A as v₀ = start, vᵢ = vᵢ₋₁ × factor + step.
 * - Named sets: `Parameters.B = {…}` (as many values as jobs), or `ParameterStart.B` and its friends.
 * - In every string (sandbox names included): `%s` is A's value, `%(B)s` B's, `%n` the job's index
 *   (zero-padded to the width of the last one), and `%j` the job's id, filled in when it has one.
 * - Each job keeps `ParameterNumber` and `Parameter.<set>`; all share one JobGroup (the given one, or
 *   one made for the submission), so the jobs can be listed and acted on together.
 */
import { randomBytes } from 'node:crypto';
import { InvalidRequest } from '../kernel/errors.ts';
import { JOB_ID_DIGITS } from './manifest.ts';

const SEQUENCE_KEYS = ['ParameterStart', 'ParameterStep', 'ParameterFactor'] as const;
const DEFAULTS = { ParameterStart: 1, ParameterStep: 0, ParameterFactor: 1 };
const SET_NAME = /^[A-Za-z0-9_]+$/;

type ParameterValue = string | number;

/** The parts of a manifest that make it parametric (removed from the jobs it expands to). */
function isParametricKey(key: string): boolean {
  return key === 'Parameters' || key.startsWith('Parameters.') || SEQUENCE_KEYS.some((k) => key === k || key.startsWith(`${k}.`));
}

function setNameOf(where: string, key: string): string {
  const name = key.slice(key.indexOf('.') + 1);
  if (!SET_NAME.test(name)) throw new InvalidRequest(`${where}: ${key}: a parameter set's name is letters, digits and '_'`);
  return name;
}

/** The value sets of a parametric manifest, each with `count` values. */
function valueSets(where: string, m: Record<string, unknown>, maxJobs: number): { count: number; sets: Map<string, ParameterValue[]> } {
  const sets = new Map<string, ParameterValue[]>();
  const listOf = (key: string, v: unknown): ParameterValue[] => {
    if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x)))) {
      throw new InvalidRequest(`${where}: ${key} must be a non-empty list of strings or numbers`);
    }
    return v as ParameterValue[];
  };
  let count: number;
  const p = m.Parameters;
  if (typeof p === 'number') {
    if (!Number.isInteger(p) || p < 1) throw new InvalidRequest(`${where}: Parameters must be a positive number of jobs or a list of values`);
    count = p;
  } else {
    const values = listOf('Parameters', p);
    count = values.length;
    sets.set('A', values);
  }
  if (count > maxJobs) throw new InvalidRequest(`${where}: Parameters asks for ${count} jobs; at most ${maxJobs} are allowed (jobs.maxParametricJobs)`);
  const sequences = new Map<string, Partial<Record<(typeof SEQUENCE_KEYS)[number], number>>>();
  for (const [key, v] of Object.entries(m)) {
    if (key.startsWith('Parameters.')) {
      const name = setNameOf(where, key);
      const values = listOf(key, v);
      if (values.length !== count) throw new InvalidRequest(`${where}: ${key} has ${values.length} values, but Parameters makes ${count} jobs`);
      sets.set(name, values);
      continue;
    }
    const seq = SEQUENCE_KEYS.find((k) => key === k || key.startsWith(`${k}.`));
    if (!seq) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new InvalidRequest(`${where}: ${key} must be a number`);
    const name = key === seq ? 'A' : setNameOf(where, key);
    sequences.set(name, { ...sequences.get(name), [seq]: v });
  }
  for (const [name, given] of sequences) {
    if (sets.has(name)) throw new InvalidRequest(`${where}: parameter set ${name} is given both as a list and as a sequence`);
    const { ParameterStart: start, ParameterStep: step, ParameterFactor: factor } = { ...DEFAULTS, ...given };
    const values = [start];
    for (let i = 1; i < count; i++) values.push(values[i - 1]! * factor + step);
    sets.set(name, values);
  }
  return { count, sets };
}

/** Replaces the placeholders of one job in every string of `v` (keys are left alone). */
function substitute(v: unknown, replace: (s: string) => string): unknown {
  if (typeof v === 'string') return replace(v);
  if (Array.isArray(v)) return v.map((x) => substitute(x, replace));
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x, replace)]));
  return v;
}

/** Every string value under `v` (keys are not substituted, so they are not visited). */
function* strings(v: unknown): Generator<string> {
  if (typeof v === 'string') yield v;
  else if (Array.isArray(v)) for (const x of v) yield* strings(x);
  else if (typeof v === 'object' && v !== null) for (const x of Object.values(v)) yield* strings(x);
}

/**
 * `%(name)s`, `%s` or `%n`. A name stops at the next `%`: with `[^)]*` alone, a string of many `%(` and no
 * `)s` made each match scan to the end of the string, and a 27 kB manifest held the event loop for seconds.
 */
const PLACEHOLDER = /%\(([^)%]*)\)s|%[sn]/g;

/** A JSON string's length in bytes without its quotes, as the job's stored manifest will hold it. */
const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v)) - (typeof v === 'string' ? 2 : 0);

/** What a manifest makes, known before any copy is made. */
export interface ParametricPlan {
  /** How many jobs. */
  count: number;
  /**
   * About how many bytes their manifests take as JSON once expanded (each `%j` at its widest); 0 for a
   * manifest without `Parameters`, which is only what was sent (bounded by jobs.jsonBodyLimit).
   */
  bytes: number;
  /** The jobs' manifests: one copy per job, so call it once the count and bytes are accepted. */
  expand(): unknown[];
}

/**
 * What a manifest stands for: itself when it has no `Parameters`, else one job per value (at most
 * `maxJobs`), counted and measured without expanding them. `%j` is left for {@link fillJobId}.
 * @throws InvalidRequest naming the key at fault.
 */
export function planParametric(raw: unknown, where: string, maxJobs: number): ParametricPlan {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !('Parameters' in raw)) return { count: 1, bytes: 0, expand: () => [raw] };
  const m = raw as Record<string, unknown>;
  const { count, sets } = valueSets(where, m, maxJobs);
  const width = String(count - 1).length;
  const base = Object.fromEntries(Object.entries(m).filter(([k]) => !isParametricKey(k)));
  // One group for the whole submission, so that its jobs can be found and acted on together.
  base.JobGroup ??= `parametric-${randomBytes(6).toString('hex')}`;
  // The placeholders are found once, in the template: their sets must exist, and they say how much each job grows.
  const uses = new Map<string, { placeholders: number; width: number }>();
  let indices = 0;
  let ids = 0;
  for (const s of strings(base)) {
    for (const match of s.matchAll(PLACEHOLDER)) {
      if (match[0] === '%n') {
        indices++;
        continue;
      }
      const set = match[1] ?? 'A';
      if (!sets.has(set)) throw new InvalidRequest(`${where}: ${match[0]} names the parameter set ${set}, which Parameters does not define`);
      const use = uses.get(set) ?? { placeholders: 0, width: match[0].length };
      use.placeholders++;
      uses.set(set, use);
    }
    for (let at = s.indexOf('%j'); at !== -1; at = s.indexOf('%j', at + 2)) ids++;
  }
  let bytes = count * (jsonBytes(base) + indices * (width - 2) + ids * (JOB_ID_DIGITS - 2) + `,"ParameterNumber":${count}`.length);
  for (const [name, values] of sets) {
    const valueBytes = values.reduce<number>((n, v) => n + jsonBytes(String(v)), 0);
    const use = uses.get(name);
    if (use) bytes += use.placeholders * (valueBytes - count * use.width);
    // Each job keeps its value as Parameter.<name> too.
    bytes += valueBytes + count * `,"Parameter.${name}":""`.length;
  }
  const expand = () => {
    const jobs: unknown[] = [];
    for (let n = 0; n < count; n++) {
      const replace = (s: string) =>
        s.replace(PLACEHOLDER, (match, name: string | undefined) => (match === '%n' ? String(n).padStart(width, '0') : String(sets.get(name ?? 'A')![n])));
      const job = substitute(base, replace) as Record<string, unknown>;
      job.ParameterNumber = n;
      for (const [name, values] of sets) job[`Parameter.${name}`] = values[n];
      jobs.push(job);
    }
    return jobs;
  };
  return { count, bytes, expand };
}

/** `%j` in a stored manifest is the job's own id (DIRAC fills it in the same way). */
export function fillJobId<T>(manifest: T, jobId: number): T {
  return substitute(manifest, (s) => s.replaceAll('%j', String(jobId))) as T;
}
