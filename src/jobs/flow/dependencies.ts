/** Jobs' dependencies as submission and GET /jobs/{jid} see them: parents checked, parents and children read. */
import type { Principal } from '../../auth/index.ts';
import type { Db } from '../../kernel/db/database.ts';
import { InsufficientPrivileges } from '../../kernel/errors.ts';
import { canSeeJob, listVisibility } from '../privileges.ts';

/**
 * Every job named as a parent exists and `principal` may see it. @throws InsufficientPrivileges (403), in
 * the same words for a job that does not exist and one the submitter may not see: neither its existence
 * nor its owner shows through (docs/workflows.md)
 */
export async function checkParents(db: Db, principal: Principal, ids: readonly number[]): Promise<void> {
  const wanted = [...new Set(ids)];
  for (let i = 0; i < wanted.length; i += 500) {
    const chunk = wanted.slice(i, i + 500);
    const rows = await db.selectFrom('jobs').select(['job_id', 'owner', 'owner_group']).where('job_id', 'in', chunk).execute();
    const found = new Map(rows.map((r) => [Number(r.job_id), r]));
    for (const id of chunk) {
      const row = found.get(id);
      if (!row || !canSeeJob(principal, row)) throw new InsufficientPrivileges(`DependsOn names job ${id}, which does not exist or which you may not see`);
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

/**
 * A job's parents with their statuses, its first MAX_CHILDREN children and how many it has, and its
 * condition (null without parents): only the jobs `principal` may see, as everywhere else.
 */
export async function dependenciesOf(db: Db, principal: Principal, jobId: number): Promise<JobDependencies> {
  const v = listVisibility(principal, true);
  const children = () =>
    db
      .selectFrom('job_dependencies as d')
      .innerJoin('jobs as c', 'c.job_id', 'd.job_id')
      .where('d.parent_id', '=', jobId)
      .where((eb) => (v.kind === 'all' ? eb.lit(true) : v.kind === 'own' ? eb('c.owner', '=', v.owner) : eb.or([eb('c.owner', '=', v.owner), eb('c.owner_group', '=', v.group)])));
  const [parents, firstChildren, counted] = await Promise.all([
    db
      .selectFrom('job_dependencies as d')
      .innerJoin('jobs as p', 'p.job_id', 'd.parent_id')
      .select(['d.parent_id', 'd.condition', 'p.status', 'p.owner', 'p.owner_group'])
      .where('d.job_id', '=', jobId)
      .orderBy('d.parent_id')
      .execute(),
    children().select('d.job_id').orderBy('d.job_id').limit(MAX_CHILDREN).execute(),
    children()
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return {
    Parents: parents.filter((p) => canSeeJob(principal, p)).map((p) => ({ JobID: Number(p.parent_id), Status: p.status })),
    Children: firstChildren.map((c) => Number(c.job_id)),
    ChildrenCount: Number(counted.n),
    DependencyType: parents[0]?.condition ?? null,
  };
}
