/** Jobs' dependencies as submission and GET /jobs/{jid} see them: parents checked, parents and children read. */
import type { Principal } from '../../auth/index.ts';
import type { Db } from '../../kernel/db/database.ts';
import { InsufficientPrivileges, InvalidRequest } from '../../kernel/errors.ts';
import { canSeeJob } from '../privileges.ts';

/**
 * Every job named as a parent exists and `principal` may see it. @throws InvalidRequest (400) for a job that
 * does not exist, InsufficientPrivileges (403) for one the submitter may not see (docs/workflows.md)
 */
export async function checkParents(db: Db, principal: Principal, ids: readonly number[]): Promise<void> {
  const wanted = [...new Set(ids)];
  for (let i = 0; i < wanted.length; i += 500) {
    const chunk = wanted.slice(i, i + 500);
    const rows = await db.selectFrom('jobs').select(['job_id', 'owner', 'owner_group']).where('job_id', 'in', chunk).execute();
    const found = new Map(rows.map((r) => [Number(r.job_id), r]));
    for (const id of chunk) {
      const row = found.get(id);
      if (!row) throw new InvalidRequest(`DependsOn: job ${id} does not exist`);
      if (!canSeeJob(principal, row)) throw new InsufficientPrivileges(`DependsOn: ${principal.username} may not see job ${id}, so no job of theirs may depend on it`);
    }
  }
}

/** The most children GET /jobs/{jid} lists (a parent of a parametric node may have 9,000); ChildrenCount says how many there are. */
export const MAX_CHILDREN = 1000;

export interface JobDependencies {
  Parents: { JobID: number; Status: string }[];
  Children: number[];
  ChildrenCount: number;
  DependencyType: string | null;
}

/** A job's parents with their statuses, its first MAX_CHILDREN children and how many it has, and its condition (null without parents). */
export async function dependenciesOf(db: Db, jobId: number): Promise<JobDependencies> {
  const [parents, children, counted] = await Promise.all([
    db
      .selectFrom('job_dependencies as d')
      .innerJoin('jobs as p', 'p.job_id', 'd.parent_id')
      .select(['d.parent_id', 'd.condition', 'p.status'])
      .where('d.job_id', '=', jobId)
      .orderBy('d.parent_id')
      .execute(),
    db.selectFrom('job_dependencies').select('job_id').where('parent_id', '=', jobId).orderBy('job_id').limit(MAX_CHILDREN).execute(),
    db
      .selectFrom('job_dependencies')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('parent_id', '=', jobId)
      .executeTakeFirstOrThrow(),
  ]);
  return {
    Parents: parents.map((p) => ({ JobID: Number(p.parent_id), Status: p.status })),
    Children: children.map((c) => Number(c.job_id)),
    ChildrenCount: Number(counted.n),
    DependencyType: parents[0]?.condition ?? null,
  };
}
