/**
 * Migration 2026_11_29_0300_jobs_sandboxes on every dialect: every sandbox the jobs of a previous release
 * point at gets a verified row for its job's group (one per sha256 and group, more than one batch of jobs
 * read), and the upgraded database takes new rows.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { groupSandbox, registerSandbox } from '../../src/jobs/sandbox-registry.ts';
import { dialects } from '../helpers/dialects.ts';
import { migrateBefore, scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';

const SANDBOXES = '2026_11_29_0300_jobs_sandboxes';
const sha = (n: number) => n.toString(16).padStart(64, '0');

for (const { dialect, skip } of await dialects()) {
  describe(`a database of the previous release upgrades to the sandbox registry (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await scratchDatabase(dialect);
    });
    after(() => s?.close());

    it('registers the sandboxes jobs point at, per group, verified', async () => {
      await migrateBefore(s.db, SANDBOXES);
      const old = s.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
      const t = '2026-11-28T10:00:00.000Z';
      const job = (i: number, owner: string, group: string, input: string | null, output: string | null) => ({
        job_name: `j${i}`, job_group: 'g', job_type: 'User', owner, owner_dn: `/CN=${owner}`, owner_group: group, setup: 'Test', site: 'Local', sites: ',Local,',
        status: 'Done', minor_status: 'm', application_status: 'Unknown', user_priority: 1, reschedule_counter: 0, submission_time: t, last_update_time: t,
        manifest: '{"Executable":"/bin/true"}', input_sandbox: input, input_sandbox_size: input ? 100 : null, output_sandbox: output, output_sandbox_size: output ? 7 : null,
      });
      // 1 200 jobs of alice sharing one input (two batches of 1 000), each with its own output; bob's job
      // shares alice's input within her group; carol's in another group has the same input again.
      const rows = Array.from({ length: 1200 }, (_, i) => job(i, 'alice', 'dirigo_user', sha(1), sha(1000 + i)));
      for (let i = 0; i < rows.length; i += 200) await old.insertInto('jobs').values(rows.slice(i, i + 200)).execute();
      await old.insertInto('jobs').values([job(2000, 'bob', 'dirigo_user', sha(1), null), job(2001, 'carol', 'dirigo_prod', sha(1), null), job(2002, 'bob', 'dirigo_user', null, null)]).execute();

      await migrate(s.db, migrations);

      const all = await s.db.selectFrom('sandboxes').selectAll().execute();
      assert.equal(all.length, 1 + 1200 + 1);
      const input = all.filter((r) => r.sha256 === sha(1)).map((r) => [r.owner_group, r.owner, Number(r.size)]).sort();
      assert.deepEqual(input, [['dirigo_prod', 'carol', 100], ['dirigo_user', 'alice', 100]]);
      assert.ok(all.every((r) => r.verified_at !== null && r.created_at === r.verified_at));
      assert.equal(Number(all.find((r) => r.sha256 === sha(1500))!.size), 7);

      // The upgraded database takes a pending row, and verifies it.
      await registerSandbox(s.db, { sha256: sha(9), size: 5, owner: 'bob', group: 'dirigo_user' }, false);
      assert.equal((await groupSandbox(s.db, sha(9), 'dirigo_user'))?.verified_at, null);
      await registerSandbox(s.db, { sha256: sha(9), size: 5, owner: 'bob', group: 'dirigo_user' }, true);
      assert.ok((await groupSandbox(s.db, sha(9), 'dirigo_user'))?.verified_at);
    });
  });
}
