/**
 * The answers of the bulk job actions (POST /jobs/kill, /jobs/hold, /workflows/{wid}/kill, ...): one
 * result per job, a new Status or a refusal. Refusals go to standard error, each once; the exit code is
 * the one the refusals share, or 1.
 */
import { EXIT } from '../../terminal/output.ts';

export type ActionResult = { jid: number; Status: string } | { jid: number; error: string; error_description: string };

/** The exit code a refused job gets, by its error code (as a single request gets it by HTTP status). */
const ACTION_EXIT: Record<string, number> = { not_found: EXIT.notFound, insufficient_privileges: EXIT.forbidden };

/** Writes each refusal on standard error as `dirigo <command>: ...`. @returns the exit code of the results */
export function reportRefusals(command: string, results: readonly ActionResult[]): number {
  const codes = new Set<number>();
  for (const r of results) {
    if ('Status' in r) continue;
    // Most refusals name their job already ('job 4 is already Done ...'): a second 'job 4:' only stutters.
    const named = r.error_description.startsWith(`job ${r.jid} `);
    process.stderr.write(`dirigo ${command}: ${named ? '' : `job ${r.jid}: `}${r.error_description}\n`);
    codes.add(ACTION_EXIT[r.error] ?? EXIT.failure);
  }
  return codes.size === 0 ? EXIT.ok : codes.size === 1 ? [...codes][0]! : EXIT.failure;
}
