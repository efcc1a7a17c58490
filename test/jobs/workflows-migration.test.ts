/**
 * Migration 2026_11_29_0100_jobs_workflows on every dialect: a database of the previous release keeps its
 * jobs whole (every column, their history), they read HoldReason '', RetryCounter 0 and no workflow, and
 * the upgraded database stores a workflow whose job depends on an old job.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { checkManifest } from '../../src/jobs/manifest.ts';
import { insertFlowJobs } from '../../src/jobs/flow/insert.ts';
import { dependenciesOf } from '../../src/jobs/flow/dependencies.ts';
import type { Principal } from '../../src/auth/index.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const WORKFLOWS = '2026_11_29_0100_jobs_workflows';

for (const { dialect, skip } of await dialects()) {
  describe(`a database of the previous release upgrades to workflows (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await scratchDatabase(dialect);
    });
    after(() => s?.close());

    it('keeps its jobs and their history; they get HoldReason "" and RetryCounter 0', async () => {
      await migrateBefore(s.db, WORKFLOWS);
      const old = s.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      const t = '2026-11-28T10:00:00.000Z';
      const job = (i: number, status: string) => ({
        job_name: `j${i}`, job_group: 'g', job_type: 'User', owner: 'alice', owner_dn: '/CN=alice', owner_group: 'dirigo_user', setup: 'Test', site: 'Local', sites: ',Local,',
        status, minor_status: `minor ${i}`, application_status: 'Unknown', user_priority: 2, reschedule_counter: i, submission_time: t, last_update_time: t,
        manifest: JSON.stringify({ Executable: '/bin/true', Sites: ['Local'] }), exit_code: status === 'Done' ? 0 : null, pilot_reference: status === 'Running' ? '7' : null,
      });
      await old.insertInto('jobs').values([job(1, 'Waiting'), job(2, 'Running'), job(3, 'Done'), job(4, 'Received')]).execute();
      const before = await old.selectFrom('jobs').selectAll().orderBy('job_id').execute();
      const ids = before.map((r) => Number(r.job_id));
      await old.insertInto('job_status_history').values(ids.map((job_id) => ({ job_id, status: 'Received', minor_status: 'Job accepted', application_status: 'Unknown', status_time: t, source: 'JobManager' }))).execute();

      await migrate(s.db, migrations);

      const afterRows = await s.db.selectFrom('jobs').selectAll().orderBy('job_id').execute();
      assert.equal(afterRows.length, 4);
      for (const [i, row] of afterRows.entries()) {
        const { hold_reason, not_before, retry_counter, workflow_id, workflow_node, ...rest } = row;
        // Every column the previous release had holds what it held (PostgreSQL bigints read back as strings alike).
        assert.deepEqual(Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, v === null ? null : String(v)])), Object.fromEntries(Object.entries(before[i]!).map(([k, v]) => [k, v === null ? null : String(v)])));
        assert.deepEqual([hold_reason, not_before, Number(retry_counter), workflow_id, workflow_node], ['', null, 0, null, null]);
      }
      assert.equal((await s.db.selectFrom('job_status_history').selectAll().execute()).length, 4);
      assert.deepEqual(await s.db.selectFrom('workflows').selectAll().execute(), []);
      assert.deepEqual(await s.db.selectFrom('job_dependencies').selectAll().execute(), []);

      // The upgraded database takes a workflow whose job waits for an old one.
      const checked = checkManifest({ Executable: '/bin/true' }, 'manifest', ['Local'], [], { maxCommandBytes: 1 << 20, maxCpuTime: 86400, workflows: { maxRetries: 10 } });
      const who = { username: 'alice', dn: '/CN=alice', group: 'dirigo_user', setup: 'Test' };
      const stored = await insertFlowJobs(
        s.db,
        who,
        [{ checked, workflow: 0, node: 'n', hold: false, parentIds: [ids[2]!], parentJobs: [], condition: 'afterok' }],
        [{ name: 'w', kind: 'workflow', maxRunning: null, nodes: [{ Name: 'n', DependsOn: [], DependencyType: 'afterok' }] }],
        undefined,
      );
      const alice = { username: 'alice', group: 'dirigo_user', setup: 'Test', clientId: 'test', properties: [], scopes: [], claims: {} } as unknown as Principal;
      const deps = await dependenciesOf(s.db, alice, stored.ids[0]!);
      assert.deepEqual(deps, { Parents: [{ JobID: ids[2]!, Status: 'Done' }], Children: [], ChildrenCount: 0, DependencyType: 'afterok' });
      const row = await s.db.selectFrom('jobs').select(['status', 'hold_reason', 'workflow_id']).where('job_id', '=', stored.ids[0]!).executeTakeFirstOrThrow();
      assert.deepEqual([row.status, row.hold_reason, Number(row.workflow_id)], ['Received', 'Dependency', stored.workflowIds[0]]);
    });
  });
}
