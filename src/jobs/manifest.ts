/**
 * Job manifests (README "Jobs"): validation with messages that name the bad key, defaults, and the values
 * the store and executors need. Unknown keys are kept as they are.
 */
import { InvalidRequest } from '../kernel/errors.ts';
import { ArgumentsError, splitArguments } from './arguments.ts';
import { fileNameProblem } from '../protocol/file-names.ts';
import type { Manifest } from '../protocol/job-manifest.ts';
import { requirementsOf, type Requirements } from './requirements.ts';
import { checkRetryKeys } from './flow/retry-keys.ts';

export type { Manifest } from '../protocol/job-manifest.ts';

/** A manifest checked and normalised for storage, with what the executor needs precomputed. */
export interface CheckedManifest {
  manifest: Manifest;
  argv: string[];
  sites: string[] | null;
  /** What it needs of the resource it runs on, for matching. */
  requirements: Requirements;
  /** The sha256 its InputSandboxRef names (checked and resolved by the service before any row is written). */
  inputSandboxRef?: string;
  /** The input sandbox it points at once resolved, instead of the submission's uploaded files. */
  inputSandbox?: { sha256: string; size: number };
}

const SANDBOX_REF = /^sha256:([0-9a-f]{64})$/;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The widths of the columns these fields are stored in (migrations.ts). */
const MAX_TEXT = { JobName: 256, JobGroup: 256, JobType: 64 } as const;
/**
 * `%j` in JobName and JobGroup becomes the job id once the job is stored (parametric.ts, fillJobId), after
 * this check: it counts as the most digits a job id (bigint) may have, so that the filled value fits too.
 */
export const JOB_ID_DIGITS = 19;
/** Linux refuses a single argument or environment string longer than this (MAX_ARG_STRLEN). */
const MAX_WORD_BYTES = 131072;

/** What a job may ask for: beyond these it could never run, so it is refused at submission. */
export interface ManifestLimits {
  /** Arguments and environment together, as exec counts them (each string, its NUL and its pointer). */
  maxCommandBytes: number;
  /** Largest CPUTime, in seconds. */
  maxCpuTime: number;
  /** Largest MaxRetries (jobs.workflows.maxRetries). */
  workflows: { maxRetries: number };
}

/** The bytes exec needs for `strings` (argv or environ): each string, its terminating NUL and its pointer. */
function execBytes(strings: Iterable<string>): number {
  let total = 0;
  for (const s of strings) total += Buffer.byteLength(s) + 1 + 8;
  return total;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The most entries of a manifest's lists: far beyond real jobs (a handful of sites, files and patterns),
 * they keep a hostile manifest from costing more than its bytes. The input sandbox's files are bounded
 * by jobs.sandbox.maxFiles too.
 */
export const MAX_LIST_ITEMS = { Sites: 1000, InputSandbox: 10000, OutputSandbox: 1000 } as const;

function stringArray(where: string, key: keyof typeof MAX_LIST_ITEMS, v: unknown): string[] {
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw new InvalidRequest(`${where}: ${key} must be an array of strings`);
  if (v.length > MAX_LIST_ITEMS[key]) throw new InvalidRequest(`${where}: ${key} has ${v.length} entries; at most ${MAX_LIST_ITEMS[key]} are allowed`);
  return v as string[];
}

/**
 * What no parametric substitution can change (types, list lengths, numbers, Environment names): checked
 * once on a parametric manifest, before it is copied into its jobs, and on every manifest by checkManifest.
 * @throws InvalidRequest naming the key.
 */
export function checkManifestTemplate(raw: unknown, where: string, limits: ManifestLimits): asserts raw is Manifest {
  if (!isObject(raw)) throw new InvalidRequest(`${where}: a manifest must be a JSON object`);
  const m = raw as Manifest;
  // Whitespace holds no placeholder, so a blank Executable stays blank in every job.
  if (typeof m.Executable !== 'string' || m.Executable.trim() === '') throw new InvalidRequest(`${where}: Executable is required and must be a non-empty string`);
  if (m.Executable.includes('\u0000')) throw new InvalidRequest(`${where}: Executable contains a NUL character`);
  for (const key of ['JobName', 'JobGroup', 'JobType'] as const) {
    if (m[key] !== undefined && typeof m[key] !== 'string') throw new InvalidRequest(`${where}: ${key} must be a string of at most ${MAX_TEXT[key]} characters`);
  }
  if (m.Arguments !== undefined && typeof m.Arguments !== 'string') throw new InvalidRequest(`${where}: Arguments must be a string`);
  if (m.Sites !== undefined && stringArray(where, 'Sites', m.Sites).length === 0) throw new InvalidRequest(`${where}: Sites must name at least one site`);
  if (m.OutputSandbox !== undefined) stringArray(where, 'OutputSandbox', m.OutputSandbox);
  if (m.InputSandbox !== undefined) stringArray(where, 'InputSandbox', m.InputSandbox);
  if (m.InputSandboxRef !== undefined && typeof m.InputSandboxRef !== 'string') throw new InvalidRequest(`${where}: InputSandboxRef must be a string "sha256:<64 lowercase hex digits>"`);
  for (const key of ['StdOutput', 'StdError'] as const) {
    if (m[key] !== undefined && typeof m[key] !== 'string') throw new InvalidRequest(`${where}: ${key} must be a string`);
  }
  if (m.Priority !== undefined && (!Number.isInteger(m.Priority) || m.Priority < 0 || m.Priority > 10)) {
    throw new InvalidRequest(`${where}: Priority must be an integer from 0 to 10`);
  }
  if (m.CPUTime !== undefined && (!Number.isInteger(m.CPUTime) || m.CPUTime <= 0 || m.CPUTime > limits.maxCpuTime)) {
    throw new InvalidRequest(`${where}: CPUTime must be a positive integer of at most ${limits.maxCpuTime} seconds`);
  }
  if (m.Environment !== undefined) {
    if (!isObject(m.Environment)) throw new InvalidRequest(`${where}: Environment must be an object of strings`);
    for (const [k, v] of Object.entries(m.Environment)) {
      if (!ENV_NAME.test(k)) throw new InvalidRequest(`${where}: Environment name '${k}' is not a valid variable name`);
      if (typeof v !== 'string' || v.includes('\u0000')) throw new InvalidRequest(`${where}: Environment.${k} must be a string without NUL`);
    }
  }
  checkRetryKeys(m, where, limits.workflows.maxRetries);
}

/**
 * Validates one manifest. `where` prefixes messages (`manifest[3]`), `knownSites` are the configured
 * sites, `uploaded` the file names of the input sandbox sent with it.
 * @throws InvalidRequest naming the key.
 */
export function checkManifest(raw: unknown, where: string, knownSites: readonly string[], uploaded: readonly string[], limits: ManifestLimits): CheckedManifest {
  checkManifestTemplate(raw, where, limits);
  const m = { ...raw };
  for (const key of ['JobName', 'JobGroup', 'JobType'] as const) {
    if (m[key] !== undefined && m[key].length > MAX_TEXT[key]) throw new InvalidRequest(`${where}: ${key} must be a string of at most ${MAX_TEXT[key]} characters`);
    if (key !== 'JobType' && m[key] !== undefined && m[key].replaceAll('%j', '#'.repeat(JOB_ID_DIGITS)).length > MAX_TEXT[key]) {
      throw new InvalidRequest(`${where}: ${key} must be a string of at most ${MAX_TEXT[key]} characters once each %j is the job id (counted as ${JOB_ID_DIGITS})`);
    }
  }
  let argv: string[] = [];
  if (m.Arguments !== undefined) {
    try {
      argv = splitArguments(m.Arguments);
    } catch (err) {
      if (err instanceof ArgumentsError) throw new InvalidRequest(`${where}: Arguments ${err.message}`);
      throw err;
    }
    if (argv.some((a) => a.includes('\u0000'))) throw new InvalidRequest(`${where}: Arguments contains a NUL character`);
  }
  let sites: string[] | null = null;
  if (m.Sites !== undefined) {
    sites = [...new Set(m.Sites)];
    const unknown = sites.find((s) => !knownSites.includes(s));
    if (unknown !== undefined) throw new InvalidRequest(`${where}: Sites names the unknown site '${unknown}' (known: ${knownSites.join(', ')})`);
  }
  for (const p of m.OutputSandbox ?? []) {
    if (p === '' || p.startsWith('/') || p.split('/').includes('..') || p.includes('\u0000')) {
      throw new InvalidRequest(`${where}: OutputSandbox pattern '${p}' must be a relative glob inside the working directory`);
    }
  }
  for (const key of ['StdOutput', 'StdError'] as const) {
    if (m[key] === undefined) continue;
    const problem = fileNameProblem(m[key]);
    if (problem) throw new InvalidRequest(`${where}: ${key} '${m[key]}' ${problem}`);
  }
  m.StdOutput ??= 'std.out';
  m.StdError ??= 'std.err';
  if (m.StdOutput === m.StdError) throw new InvalidRequest(`${where}: StdOutput and StdError must differ`);
  // What exec would refuse (E2BIG) is refused here, where the submitter can still be told.
  const words = [m.Executable, ...argv];
  const env = Object.entries(m.Environment ?? {}).map(([k, v]) => `${k}=${v}`);
  const long = [...words, ...env].find((w) => Buffer.byteLength(w) >= MAX_WORD_BYTES);
  if (long !== undefined) throw new InvalidRequest(`${where}: an argument or environment value is ${Buffer.byteLength(long)} bytes; each must be under ${MAX_WORD_BYTES}`);
  const commandBytes = execBytes(words) + execBytes(env);
  if (commandBytes > limits.maxCommandBytes) {
    throw new InvalidRequest(`${where}: Arguments and Environment need ${commandBytes} bytes to start the job; at most ${limits.maxCommandBytes} are allowed (jobs.maxCommandBytes)`);
  }
  let inputSandboxRef: string | undefined;
  if (m.InputSandboxRef !== undefined) {
    const ref = SANDBOX_REF.exec(m.InputSandboxRef);
    if (!ref) throw new InvalidRequest(`${where}: InputSandboxRef must be "sha256:<64 lowercase hex digits>", not ${JSON.stringify(m.InputSandboxRef.slice(0, 80))}`);
    if (uploaded.length > 0) throw new InvalidRequest(`${where}: InputSandboxRef names an uploaded sandbox; files sent with the submission cannot be added to it (send either)`);
    inputSandboxRef = ref[1]!;
    // The files inside the referenced sandbox, as its submitter lists them: each a plain name.
    for (const name of m.InputSandbox ?? []) {
      const problem = fileNameProblem(name);
      if (problem) throw new InvalidRequest(`${where}: InputSandbox name '${name}' ${problem}`);
    }
  } else {
    if (m.InputSandbox !== undefined) {
      const files = new Set(uploaded);
      const missing = m.InputSandbox.find((n) => !files.has(n));
      if (missing !== undefined) throw new InvalidRequest(`${where}: InputSandbox names '${missing}', which was not uploaded with the submission`);
    }
    // The stored manifest lists what its input sandbox really holds.
    if (uploaded.length > 0) m.InputSandbox = [...uploaded];
    else delete m.InputSandbox;
  }
  return { manifest: m, argv, sites, requirements: requirementsOf(m, where, knownSites), ...(inputSandboxRef ? { inputSandboxRef } : {}) };
}
