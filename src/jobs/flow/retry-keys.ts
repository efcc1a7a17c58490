/**
 * The manifest keys that say what a run's end makes of a job (docs/workflows.md "When a run ends"):
 * MaxRetries, RetryExitCodes, SuccessExitCodes, OnExitHold, RetryDelay and BanFailedSites. Checked at
 * submission with 400s that name the key; read back from stored manifests by lifecycle/run-end.ts.
 */
import { InvalidRequest } from '../../kernel/errors.ts';
import type { Manifest } from '../../protocol/job-manifest.ts';

/** Exit codes as a shell reports them: 0…255; the lists name failures, so from 1 (0 is success already). */
const MAX_EXIT_CODE = 255;
const MIN_LISTED_CODE = 1;
/** A list of exit codes holds each code once at most, so no longer list is of use. */
export const MAX_EXIT_CODES = MAX_EXIT_CODE;
/** The longest RetryDelay a manifest may ask for, in seconds. */
export const MAX_RETRY_DELAY = 3600;

const EXIT_CODE_LISTS = ['OnExitHold', 'RetryExitCodes', 'SuccessExitCodes'] as const;

function integerIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/**
 * Checks the retry keys of a manifest (JSON, or JDL as parseJdl reads it: lists as arrays, true/false as
 * booleans). `maxRetries` is jobs.workflows.maxRetries.
 * @throws InvalidRequest naming the key.
 */
export function checkRetryKeys(m: Manifest, where: string, maxRetries: number): void {
  if (m.MaxRetries !== undefined && !integerIn(m.MaxRetries, 0, maxRetries)) {
    throw new InvalidRequest(`${where}: MaxRetries must be an integer from 0 to ${maxRetries} (jobs.workflows.maxRetries)`);
  }
  for (const key of EXIT_CODE_LISTS) {
    const v: unknown = m[key];
    if (v === undefined) continue;
    if (!Array.isArray(v)) throw new InvalidRequest(`${where}: ${key} must be a list of exit codes (integers from ${MIN_LISTED_CODE} to ${MAX_EXIT_CODE})`);
    if (v.length > MAX_EXIT_CODES) throw new InvalidRequest(`${where}: ${key} has ${v.length} entries; at most ${MAX_EXIT_CODES} are allowed`);
    const bad: unknown = v.find((c) => !integerIn(c, MIN_LISTED_CODE, MAX_EXIT_CODE));
    if (bad !== undefined) throw new InvalidRequest(`${where}: ${key} holds ${JSON.stringify(bad)}; exit codes are integers from ${MIN_LISTED_CODE} to ${MAX_EXIT_CODE} (0 is success already)`);
  }
  if (m.RetryDelay !== undefined && !integerIn(m.RetryDelay, 0, MAX_RETRY_DELAY)) {
    throw new InvalidRequest(`${where}: RetryDelay must be an integer from 0 to ${MAX_RETRY_DELAY} (seconds)`);
  }
  if (m.BanFailedSites !== undefined && typeof m.BanFailedSites !== 'boolean') {
    throw new InvalidRequest(`${where}: BanFailedSites must be true or false`);
  }
}

/** What a stored manifest (already checked) says about the end of its runs. */
export interface RetryPolicy {
  maxRetries: number;
  /** null: any non-zero exit code is retried. */
  retryExitCodes: readonly number[] | null;
  successExitCodes: readonly number[];
  onExitHold: readonly number[];
  /** Seconds; null: jobs.workflows.retryDelay. */
  retryDelay: number | null;
  banFailedSites: boolean;
}

const codes = (v: unknown): number[] => (Array.isArray(v) ? v.filter((c): c is number => integerIn(c, 0, MAX_EXIT_CODE)) : []);

/** The retry policy of a stored manifest; a value that does not pass (an older manifest) counts as absent. */
export function retryPolicyOf(m: Manifest): RetryPolicy {
  return {
    maxRetries: integerIn(m.MaxRetries, 0, Number.MAX_SAFE_INTEGER) ? m.MaxRetries : 0,
    retryExitCodes: Array.isArray(m.RetryExitCodes) ? codes(m.RetryExitCodes) : null,
    successExitCodes: codes(m.SuccessExitCodes),
    onExitHold: codes(m.OnExitHold),
    retryDelay: integerIn(m.RetryDelay, 0, MAX_RETRY_DELAY) ? m.RetryDelay : null,
    banFailedSites: m.BanFailedSites === true,
  };
}
