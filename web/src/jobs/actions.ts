/** Kill, reschedule or delete many jobs in one request; the server answers each job on its own. */
import { api, unwrap } from '../api.ts';

export type JobAction = 'kill' | 'reschedule' | 'delete';

export interface ActionOutcome {
  done: number;
  refused: { jid: number; error_description: string }[];
}

export async function actOnJobs(action: JobAction, jids: number[]): Promise<ActionOutcome> {
  const path = action === 'kill' ? '/jobs/kill' : action === 'reschedule' ? '/jobs/reschedule' : '/jobs/delete';
  const { results } = unwrap(await api.POST(path, { body: { jids } }));
  const refused = results.flatMap((r) => ('error' in r ? [{ jid: r.jid, error_description: r.error_description }] : []));
  return { done: results.length - refused.length, refused };
}
