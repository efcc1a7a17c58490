/**
 * What the accounting suites share: a service with two sites, and usage records of two users, two groups
 * and two sites around a month's end (2026-10-31 is a Saturday, 2026-11-02 a Monday), written with
 * recordRuns as the jobs domain writes them.
 */
import { recordRuns, type EndedRunRecord } from '../../src/accounting/index.ts';
import type { TestDialect } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const run = (r: Partial<EndedRunRecord> & Pick<EndedRunRecord, 'jobId' | 'owner' | 'ownerGroup' | 'site' | 'endTime' | 'startTime' | 'processors' | 'status'>): EndedRunRecord => ({
  run: 1,
  resource: '',
  jobType: 'User',
  exitCode: r.status === 'Done' ? 0 : 1,
  ...r,
});

/**
 * Five runs. Totals: 5 jobs, 5 wall hours, 9 core hours, 3.5 CPU hours over 5 measured core hours (0.7).
 * Local: alice's, bob's two (one never started); Pool: alice's (dirigo_prod, 2 processors), carol's.
 */
export const RUNS: EndedRunRecord[] = [
  run({ jobId: 1, owner: 'alice', ownerGroup: 'dirigo_user', site: 'Local', startTime: '2026-10-31T22:30:00.000Z', endTime: '2026-10-31T23:30:00.000Z', processors: 1, status: 'Done', usage: { cpuUserSeconds: 1500, cpuSystemSeconds: 300 } }),
  run({ jobId: 2, owner: 'alice', ownerGroup: 'dirigo_prod', site: 'Pool', resource: 'node1', jobType: 'MCSimulation', startTime: '2026-10-31T23:30:00.000Z', endTime: '2026-11-01T00:30:00.000Z', processors: 2, status: 'Done', usage: { cpuUserSeconds: 3000, cpuSystemSeconds: 600, maxRssKb: 1024 } }),
  run({ jobId: 3, owner: 'bob', ownerGroup: 'dirigo_user', site: 'Local', startTime: '2026-11-02T00:15:00.000Z', endTime: '2026-11-02T01:15:00.000Z', processors: 4, status: 'Killed' }),
  run({ jobId: 4, owner: 'carol', ownerGroup: 'dirigo_prod', site: 'Pool', resource: 'node2', startTime: '2026-11-02T01:00:00.000Z', endTime: '2026-11-02T03:00:00.000Z', processors: 1, status: 'Failed', usage: { cpuUserSeconds: 7000, cpuSystemSeconds: 200 } }),
  run({ jobId: 5, owner: 'bob', ownerGroup: 'dirigo_user', site: 'Local', startTime: null, endTime: '2026-11-02T04:00:00.000Z', processors: 1, status: 'Killed', exitCode: null }),
];

export const RANGE = 'from=2026-10-31T00:00:00Z&to=2026-11-03T00:00:00Z';

export async function startAccountingService(dialect: TestDialect): Promise<TestService> {
  const svc = await startTestService({ dialect, config: { jobs: { sites: [{ name: 'Local', type: 'local', slots: 1 }, { name: 'Pool', type: 'agents' }] } } });
  await recordRuns(svc.ctx.db, RUNS);
  return svc;
}
