/**
 * Migrations 2026_11_28_0100 (pilots), 0200 (jobs.pilot_reference) and 0210 on every dialect: a database
 * of the previous release keeps its jobs and agents' presence, gains the pilot registry, and its jobs
 * read PilotReference null until a pilot takes them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { insertPilot, latestPilotOf, pilotJobIds, recordPilotJobs } from '../../src/agents/pilots/store.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const PILOTS = '2026_11_28_0100_pilots';

for (const { dialect, skip } of await dialects()) {
  describe(`a database of the previous release upgrades to pilots (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await scratchDatabase(dialect);
    });
    after(() => s?.close());

    it('keeps its jobs and agents, adds the registry and PilotReference', async () => {
      await migrateBefore(s.db, PILOTS);
      const old = s.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      const t = '2026-11-27T10:00:00.000Z';
      const job = (i: number, status: string) => ({
        job_name: `j${i}`, job_group: '', job_type: 'User', owner: 'alice', owner_dn: '/CN=alice', owner_group: 'g', setup: 'Test', site: 'Pool', sites: ',Pool,',
        status, minor_status: '', application_status: 'Unknown', user_priority: 1, reschedule_counter: 0, submission_time: t, last_update_time: t,
        manifest: JSON.stringify({ Executable: '/bin/true', Sites: ['Pool'] }), executor_id: status === 'Running' ? 'agent:old-1' : null,
      });
      await old.insertInto('jobs').values([job(1, 'Waiting'), job(2, 'Running'), job(3, 'Done')]).execute();
      await old.insertInto('agent_presence').values({ pilot: 'pilot', agent_id: 'old-1', site: 'Pool', last_seen: t }).execute();

      await migrate(s.db, migrations);

      const jobs = await s.db.selectFrom('jobs').select(['job_id', 'status', 'executor_id', 'pilot_reference']).orderBy('job_id').execute();
      assert.deepEqual(jobs.map((j) => [j.status, j.executor_id, j.pilot_reference]), [['Waiting', null, null], ['Running', 'agent:old-1', null], ['Done', null, null]]);
      assert.equal((await s.db.selectFrom('agent_presence').selectAll().execute()).length, 1);
      // The registry works on the upgraded database.
      const id = await insertPilot(s.db, { site: 'Pool', resource: '', reason: '', origin: 'manual', owner: 'pilot', agent_id: 'old-1', state: 'Running' });
      await recordPilotJobs(s.db, id, [Number(jobs[1]!.job_id)]);
      assert.deepEqual(await pilotJobIds(s.db, id), [Number(jobs[1]!.job_id)]);
      assert.equal((await latestPilotOf(s.db, 'pilot', 'old-1'))?.pilot_id, id);
      await s.db.updateTable('jobs').set({ pilot_reference: String(id) }).where('job_id', '=', jobs[1]!.job_id).execute();
      assert.equal((await s.db.selectFrom('jobs').select('pilot_reference').where('job_id', '=', jobs[1]!.job_id).executeTakeFirstOrThrow()).pilot_reference, String(id));
      assert.deepEqual(await s.db.selectFrom('pilot_keys').selectAll().execute(), []);
    });
  });
}
