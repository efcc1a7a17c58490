/**
 * Sandbox retention (docs/sandboxes.md "Retention") on each database, with the file store and with the S3
 * store on moto_server, driven by the test's own clock: exactly what should go goes — a Deleted job's
 * sandbox another job still points at stays, a young unreferenced upload stays, an old orphan object goes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { applyRetention, retentionAt, type RetentionResult } from '../../src/jobs/retention.ts';
import { sandboxStore } from '../../src/jobs/sandboxes.ts';
import type { ServiceSandboxStore } from '../../src/payload/sandbox-store.ts';
import { startJobsService, submit } from './helpers.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const PERIODS = { deletedRetentionMs: 7 * DAY, unreferencedRetentionMs: DAY };

for (const { dialect, skip } of await dialects()) {
  for (const storeKind of ['file', 's3'] as const) {
    describe(`sandbox retention (${dialect}, ${storeKind} store)`, { skip }, () => {
      let svc: TestService;
      let store: ServiceSandboxStore;
      before(async () => {
        svc = await startJobsService(dialect, { scheduler: { enabled: false } }, { sandboxStore: storeKind });
        store = sandboxStore(svc.ctx);
      });
      after(() => svc?.close());

      it('removes what the rules say, and only that', async () => {
        // The clock of the test: a month ahead, so that every object written now is old by then.
        const now = new Date(Date.now() + 30 * DAY);
        const at = (ms: number) => new Date(now.getTime() - ms).toISOString();
        const db = svc.ctx.db;
        const put = async (text: string) => (await store.put(Readable.from([Buffer.from(`${text} ${Math.random()}`)]))).sha256;
        const sb = {
          deletedOnly: await put('input of a job deleted long ago'),
          deletedShared: await put('output of a job deleted long ago, input of a live one'),
          deletedRecently: await put('input of a job deleted yesterday'),
          live: await put('input of a waiting job'),
          youngUpload: await put('uploaded an hour ago, its submission on the way'),
          oldUpload: await put('uploaded two days ago, never used'),
          twoGroups: await put('uploaded by two groups: one long ago, one just now'),
          orphan: await put('stored, then the instance crashed before its row'),
        };
        const alice = await svc.token('alice');
        const job = async (input: string | null, output: string | null, deletedAgo?: number) => {
          const jid = await submit(svc, alice, { Executable: '/bin/true' });
          await db.updateTable('jobs').set({ input_sandbox: input, input_sandbox_size: input ? 10 : null, output_sandbox: output, output_sandbox_size: output ? 10 : null }).where('job_id', '=', jid).execute();
          if (deletedAgo !== undefined) {
            const del = await svc.request('/jobs/delete', { method: 'POST', token: alice, json: { jids: [jid] } });
            assert.equal(del.status, 200, del.text);
            await db.updateTable('jobs').set({ last_update_time: at(deletedAgo) }).where('job_id', '=', jid).execute();
          }
          return jid;
        };
        const longAgo = await job(null, sb.deletedShared, 8 * DAY);
        const alone = await job(sb.deletedOnly, null, 8 * DAY);
        const yesterday = await job(sb.deletedRecently, null, DAY);
        const waiting = await job(sb.deletedShared, null);
        const live = await job(sb.live, null);
        await db.deleteFrom('sandboxes').execute();
        const row = (sha256: string, ago: number, group = 'dirigo_user') => ({ sha256, owner_group: group, owner: 'alice', size: 10, created_at: at(ago), verified_at: at(ago) });
        await db
          .insertInto('sandboxes')
          .values([
            row(sb.deletedOnly, 10 * DAY),
            row(sb.deletedShared, 10 * DAY),
            row(sb.deletedRecently, 10 * DAY),
            row(sb.live, 10 * DAY),
            row(sb.youngUpload, HOUR),
            row(sb.oldUpload, 2 * DAY),
            row(sb.twoGroups, 2 * DAY),
            row(sb.twoGroups, HOUR, 'dirigo_prod'),
          ])
          .execute();

        // Today nothing is old enough: every object was just written, and the rows are from "the future".
        const today = await applyRetention(db, store, retentionAt(new Date(), PERIODS));
        assert.deepEqual(today, { releasedJobs: 0, rows: [], objects: [] } satisfies RetentionResult);

        const rules = retentionAt(now, PERIODS);
        const planned = await applyRetention(db, store, { ...rules, dryRun: true });
        const result = await applyRetention(db, store, rules);
        const summary = (r: RetentionResult) => ({
          releasedJobs: r.releasedJobs,
          rows: r.rows.map((x) => `${x.sha256} ${x.group}`).sort(),
          objects: r.objects.map((o) => `${o.sha256} ${o.why}`).sort(),
        });
        const expected = {
          releasedJobs: 2,
          rows: [`${sb.deletedOnly} dirigo_user`, `${sb.oldUpload} dirigo_user`, `${sb.twoGroups} dirigo_user`].sort(),
          objects: [`${sb.deletedOnly} deleted job`, `${sb.oldUpload} unreferenced`, `${sb.orphan} orphan`].sort(),
        };
        assert.deepEqual(summary(planned), expected, 'the dry run plans what the real pass does');
        assert.deepEqual(summary(result), expected);

        for (const gone of [sb.deletedOnly, sb.oldUpload, sb.orphan]) assert.equal(await store.exists(gone), false, gone);
        for (const kept of [sb.deletedShared, sb.deletedRecently, sb.live, sb.youngUpload, sb.twoGroups]) assert.equal(await store.exists(kept), true, kept);
        const pointers = await db.selectFrom('jobs').select(['job_id', 'input_sandbox', 'output_sandbox']).where('job_id', 'in', [longAgo, alone, yesterday, waiting, live]).orderBy('job_id').execute();
        assert.deepEqual(
          pointers.map((p) => [p.input_sandbox, p.output_sandbox]),
          [
            [null, null],
            [null, null],
            [sb.deletedRecently, null],
            [sb.deletedShared, null],
            [sb.live, null],
          ],
        );
        const rows = await db.selectFrom('sandboxes').select(['sha256', 'owner_group']).orderBy('sha256').orderBy('owner_group').execute();
        assert.deepEqual(
          rows.map((r) => `${r.sha256} ${r.owner_group}`),
          [`${sb.deletedShared} dirigo_user`, `${sb.deletedRecently} dirigo_user`, `${sb.live} dirigo_user`, `${sb.youngUpload} dirigo_user`, `${sb.twoGroups} dirigo_prod`].sort(),
        );
        // A second pass at the same time finds nothing more.
        assert.deepEqual(await applyRetention(db, store, rules), { releasedJobs: 0, rows: [], objects: [] } satisfies RetentionResult);
      });
    });
  }
}
