/**
 * Peek (DIRAC's dirac-wms-job-peek): the end of a running job's standard output. Local and Slurm sites
 * read it where the payload writes it; pull agents send it with their heartbeats, kept here.
 */
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';

/** An agent's latest view of a job's StdOutput: its end, and the file's whole size. */
export async function storeOutputTail(db: Db, jobId: number, output: string, size: number): Promise<void> {
  const row = { job_id: jobId, output, size, time: nowIso() };
  await db
    .insertInto('job_output_tails')
    .values(row)
    .onConflict((oc) => oc.column('job_id').doUpdateSet({ output, size, time: row.time }))
    .execute();
}

export async function outputTailOf(db: Db, jobId: number): Promise<{ output: string; size: number } | undefined> {
  const row = await db.selectFrom('job_output_tails').select(['output', 'size']).where('job_id', '=', jobId).executeTakeFirst();
  return row ? { output: row.output, size: Number(row.size) } : undefined;
}
