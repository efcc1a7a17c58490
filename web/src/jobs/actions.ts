/** Kill, reschedule, delete, hold or release many jobs in one request; the server answers each job on its own. */
import { api, unwrap } from '../api.ts';

export type JobAction = 'kill' | 'reschedule' | 'delete' | 'hold' | 'release';

export interface ActionOutcome {
  done: number;
  refused: { jid: number; error_description: string }[];
}

const PATHS = { kill: '/jobs/kill', reschedule: '/jobs/reschedule', delete: '/jobs/delete', hold: '/jobs/hold', release: '/jobs/release' } as const;

export async function actOnJobs(action: JobAction, jids: number[]): Promise<ActionOutcome> {
  const { results } = unwrap(await api.POST(PATHS[action], { body: { jids } }));
  const refused = results.flatMap((r) => ('error' in r ? [{ jid: r.jid, error_description: r.error_description }] : []));
  return { done: results.length - refused.length, refused };
}

/** Hold applies to a Waiting job, or a Received one not held by someone already (docs/workflows.md). */
export function mayHold(status: string | null | undefined, holdReason: string | null | undefined): boolean {
  return status === 'Waiting' || (status === 'Received' && holdReason !== 'Held');
}

/** Release applies to a job held by someone or by its exit code. */
export function mayRelease(status: string | null | undefined, holdReason: string | null | undefined): boolean {
  return status === 'Received' && (holdReason === 'Held' || holdReason === 'ExitCode');
}
