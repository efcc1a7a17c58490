import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startListingFixture } from './helpers.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`jobs: listing with restrictions, allOwners, maxJobs, startJob (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let admin: string;
    let aliceIds: number[];
    let bobIds: number[];
    before(async () => {
      ({ svc, alice, bob, admin, aliceIds, bobIds } = await startListingFixture(dialect));
    });
    after(() => svc?.close());

    const ids = (res: { json: { jobs: { JobID: number }[] } }) => res.json.jobs.map((j) => j.JobID);

    it('lists only the caller’s jobs by default, newest first, with the total', async () => {
      const res = await svc.request('/jobs', { token: alice });
      assert.equal(res.status, 200);
      assert.equal(res.json.entries, 12);
      assert.equal(res.json.startJob, 0);
      assert.equal(res.json.maxJobs, 100);
      assert.deepEqual(ids(res), [...aliceIds].reverse());
      const job = res.json.jobs[0];
      for (const key of ['JobID', 'JobName', 'JobGroup', 'JobType', 'Owner', 'OwnerDN', 'OwnerGroup', 'Setup', 'Site', 'Status', 'MinorStatus', 'ApplicationStatus', 'UserPriority', 'RescheduleCounter', 'SubmissionTime', 'LastUpdateTime', 'StartExecTime', 'EndExecTime', 'HeartBeatTime', 'ExitCode']) {
        assert.ok(key in job, key);
      }
      assert.equal(job.OwnerDN, '/O=Dirigo/OU=Users/CN=alice');
      assert.equal(job.Site, 'ANY');
    });

    it('pages with maxJobs and startJob', async () => {
      const page = await svc.request('/jobs?maxJobs=5&startJob=5', { token: alice });
      assert.equal(page.json.entries, 12);
      assert.equal(page.json.maxJobs, 5);
      assert.equal(page.json.startJob, 5);
      assert.deepEqual(ids(page), [...aliceIds].reverse().slice(5, 10));
      const past = await svc.request('/jobs?startJob=50', { token: alice });
      assert.equal(past.json.entries, 12);
      assert.deepEqual(past.json.jobs, []);
    });

    it('pages by cursor: nextCursor continues where the page ended, in any sort order', async () => {
      const follow = async (query: string) => {
        const seen: number[] = [];
        let url = `/jobs?${query}`;
        for (;;) {
          const page = await svc.request(url, { token: alice });
          assert.equal(page.status, 200, page.text);
          assert.equal(page.json.entries, 12);
          seen.push(...ids(page));
          if (page.json.nextCursor === null) return seen;
          assert.equal(page.json.jobs.length, 5);
          url = `/jobs?${query}&cursor=${encodeURIComponent(page.json.nextCursor)}`;
        }
      };
      assert.deepEqual(await follow('maxJobs=5'), [...aliceIds].reverse());
      const sortedAll = ids(await svc.request('/jobs?sort=JobGroup&sort=-UserPriority', { token: alice }));
      assert.deepEqual(await follow('maxJobs=5&sort=JobGroup&sort=-UserPriority'), sortedAll);
      const exact = await svc.request('/jobs?maxJobs=12', { token: alice });
      assert.equal(exact.json.nextCursor, null, 'no next page when the page holds the last job');
      // The offset page hands out a cursor too, for the page after it.
      const offset = await svc.request('/jobs?maxJobs=5&startJob=5', { token: alice });
      const next = await svc.request(`/jobs?maxJobs=5&cursor=${encodeURIComponent(offset.json.nextCursor)}`, { token: alice });
      assert.deepEqual(ids(next), [...aliceIds].reverse().slice(10));
      const both = await svc.request(`/jobs?startJob=5&cursor=${encodeURIComponent(offset.json.nextCursor)}`, { token: alice });
      assert.equal(both.status, 400);
      const altered = await svc.request('/jobs?cursor=bm90IGEgY3Vyc29y', { token: alice });
      assert.equal(altered.status, 400);
      assert.match(altered.json.error_description, /cursor/);
      const otherSort = await svc.request(`/jobs?sort=JobGroup&cursor=${encodeURIComponent(offset.json.nextCursor)}`, { token: alice });
      assert.equal(otherSort.status, 400);
    });

    it('ANDs restrictions across keys and ORs a repeated key', async () => {
      const waiting = await svc.request('/jobs?Status=Waiting', { token: alice });
      assert.equal(waiting.json.entries, 10);
      const both = await svc.request('/jobs?Status=Waiting&Status=Killed', { token: alice });
      assert.equal(both.json.entries, 12);
      const narrowed = await svc.request('/jobs?Status=Killed&JobGroup=g0', { token: alice });
      assert.deepEqual(ids(narrowed), [aliceIds[0]]);
      const names = await svc.request('/jobs?JobName=a3&JobName=a5&JobName=zzz', { token: alice });
      assert.deepEqual(ids(names), [aliceIds[5], aliceIds[3]]);
      const prio = await svc.request('/jobs?UserPriority=3&Site=ANY', { token: alice });
      assert.deepEqual(ids(prio), [aliceIds[11], aliceIds[7], aliceIds[3]]);
      const byId = await svc.request(`/jobs?JobID=${aliceIds[4]}&JobID=${bobIds[0]}`, { token: alice });
      assert.deepEqual(ids(byId), [aliceIds[4]], 'bob’s job stays hidden even by id');
      const none = await svc.request('/jobs?Status=Done', { token: alice });
      assert.deepEqual(none.json, { entries: 0, entriesExact: true, startJob: 0, maxJobs: 100, jobs: [], nextCursor: null });
      // Restrictions the job counts do not keep are counted on the jobs themselves (exactly, below the bound).
      const named = await svc.request('/jobs?JobName=a3&JobName=a5', { token: alice });
      assert.equal(named.json.entries, 2);
      assert.equal(named.json.entriesExact, true);
    });

    it('allOwners: everyone for an administrator, only one’s own for a plain user', async () => {
      const adminAll = await svc.request('/jobs?allOwners=true&maxJobs=1000', { token: admin });
      assert.equal(adminAll.json.entries, 14);
      const adminOwn = await svc.request('/jobs?allOwners=false', { token: admin });
      assert.equal(adminOwn.json.entries, 0);
      const bobAll = await svc.request('/jobs?allOwners=true', { token: bob });
      assert.deepEqual(ids(bobAll), [...bobIds].reverse());
      const adminBob = await svc.request('/jobs?allOwners=true&Owner=bob', { token: admin });
      assert.deepEqual(ids(adminBob), [...bobIds].reverse());
      const viaQueryToken = await svc.request(`/jobs?maxJobs=1&access_token=${alice}`);
      assert.equal(viaQueryToken.status, 200);
      assert.equal(viaQueryToken.json.jobs.length, 1);
      assert.equal(viaQueryToken.headers['cache-control'], 'no-store');
    });

    it('one Status, one’s own or every owner’s: in id order either way, the same rows by startJob, by cursor and streamed', async () => {
      const byStatus = async (status: string, order: 'asc' | 'desc', owner?: string) =>
        (await svc.ctx.db.selectFrom('jobs').select('job_id').where('status', '=', status).$if(owner !== undefined, (q) => q.where('owner', '=', owner!)).orderBy('job_id', order).execute()).map((r) => Number(r.job_id));
      const cases = [
        [admin, 'allOwners=true&Status=Waiting', 'Waiting', 'desc', undefined],
        [admin, 'allOwners=true&Status=Waiting&sort=JobID', 'Waiting', 'asc', undefined],
        [admin, 'allOwners=true&Status=Killed&sort=-JobID', 'Killed', 'desc', undefined],
        [alice, 'Status=Waiting', 'Waiting', 'desc', 'alice'],
      ] as const;
      for (const [token, query, status, order, owner] of cases) {
        const expected = await byStatus(status, order, owner);
        assert.ok(expected.length >= 2, `${query}: the fixture holds several`);
        const whole = await svc.request(`/jobs?${query}&maxJobs=1000`, { token });
        assert.deepEqual([ids(whole), whole.json.entries], [expected, expected.length]);
        const twice = await svc.request(`/jobs?${query}&Status=${status}&maxJobs=1000`, { token });
        assert.deepEqual(ids(twice), expected, `${query}: a value given twice`);
        const seen: number[] = [];
        for (let url = `/jobs?${query}&maxJobs=2`; ; ) {
          const page = await svc.request(url, { token });
          seen.push(...ids(page));
          if (page.json.nextCursor === null) break;
          url = `/jobs?${query}&maxJobs=2&cursor=${encodeURIComponent(page.json.nextCursor)}`;
        }
        assert.deepEqual(seen, expected, `${query}: by cursor`);
        const offset = await svc.request(`/jobs?${query}&maxJobs=2&startJob=1`, { token });
        assert.deepEqual(ids(offset), expected.slice(1, 3), `${query}: by startJob`);
        const streamed = await svc.request(`/jobs/stream?${query}`, { token });
        assert.deepEqual(streamed.text.trim().split('\n').map((l) => (JSON.parse(l) as { JobID: number }).JobID), expected, `${query}: streamed`);
      }
    });

    it('allOwners for a JobSharing group member: one’s own jobs and the group’s, paged by offset and by cursor in any order', async () => {
      const aliceProd = await svc.token('alice', 'dirigo_prod');
      const carolProd = await svc.token('carol', 'dirigo_prod');
      const carolUser = await svc.token('carol');
      const submit = async (token: string, names: string[]) =>
        (await svc.request('/jobs', { method: 'POST', token, json: names.map((JobName) => ({ Executable: '/bin/true', JobName })) })).json.jids as number[];
      const shared = await submit(aliceProd, ['p0', 'p1', 'p2']);
      const carolsProd = await submit(carolProd, ['c0', 'c1']);
      const carolsOwn = await submit(carolUser, ['c2']);
      const expected = [...shared, ...carolsProd, ...carolsOwn].sort((a, b) => b - a);
      const all = await svc.request('/jobs?allOwners=true', { token: carolProd });
      assert.deepEqual(ids(all), expected, 'alice’s other jobs stay hidden');
      assert.equal(all.json.entries, expected.length);
      for (const sort of ['', '&sort=JobName', '&sort=-JobName']) {
        const whole = ids(await svc.request(`/jobs?allOwners=true${sort}`, { token: carolProd }));
        const byOffset: number[] = [];
        for (let start = 0; start < whole.length; start += 2) byOffset.push(...ids(await svc.request(`/jobs?allOwners=true&maxJobs=2&startJob=${start}${sort}`, { token: carolProd })));
        assert.deepEqual(byOffset, whole, `offset pages${sort}`);
        const byCursor: number[] = [];
        let page = await svc.request(`/jobs?allOwners=true&maxJobs=2${sort}`, { token: carolProd });
        for (;;) {
          byCursor.push(...ids(page));
          if (page.json.nextCursor === null) break;
          page = await svc.request(`/jobs?allOwners=true&maxJobs=2${sort}&cursor=${encodeURIComponent(page.json.nextCursor)}`, { token: carolProd });
        }
        assert.deepEqual(byCursor, whole, `cursor pages${sort}`);
      }
      const named = await svc.request('/jobs?allOwners=true&JobName=p1&JobName=c2', { token: carolProd });
      assert.deepEqual(ids(named), [carolsOwn[0], shared[1]]);
    });

    it('shows one job with its status history', async () => {
      const res = await svc.request(`/jobs/${aliceIds[0]}`, { token: alice });
      assert.equal(res.status, 200);
      assert.equal(res.json.Status, 'Killed');
      assert.deepEqual(
        res.json.StatusHistory.map((h: { Status: string; Source: string }) => [h.Status, h.Source]),
        [
          ['Received', 'JobManager'],
          ['Waiting', 'JobManager'],
          ['Killed', 'alice'],
        ],
      );
    });

    it('counts entries exactly from the job counts, and up to 10,000 for other restrictions (entriesExact)', async () => {
      // 10,050 more jobs of bob's, written in bulk (the counting triggers see them as any insert).
      const series = dialect === 'postgres' ? sql`select generate_series(1, 10050) as i` : sql`with recursive s(i) as (select 1 union all select i + 1 from s where i < 10050) select i from s`;
      await sql`insert into jobs (job_name, job_group, job_type, owner, owner_dn, owner_group, setup, site, status, minor_status, application_status,
          user_priority, reschedule_counter, submission_time, last_update_time, manifest)
        select 'bulk', '', 'User', 'bob', '/O=Dirigo/OU=Users/CN=bob', 'dirigo_user', 'Dirigo-Test', 'ANY', 'Done', 'generated', 'Unknown', 1, 0,
          '2026-11-25T00:00:00.000Z', '2026-11-25T00:00:00.000Z', '{}' from (${series}) as t`.execute(svc.ctx.db);
      const counted = await svc.request('/jobs?maxJobs=1&Status=Done', { token: bob });
      assert.deepEqual([counted.json.entries, counted.json.entriesExact], [10050, true]);
      const bounded = await svc.request('/jobs?maxJobs=1&MinorStatus=generated', { token: bob });
      assert.deepEqual([bounded.json.entries, bounded.json.entriesExact], [10000, false], 'at least 10,000');
      const deep = await svc.request('/jobs?maxJobs=10&startJob=10020&MinorStatus=generated', { token: bob });
      assert.deepEqual([deep.json.entries, deep.json.entriesExact, deep.json.jobs.length], [10031, false, 10], 'at least as many as seen so far');
      const few = await svc.request('/jobs?maxJobs=1&JobName=b0&JobName=b1', { token: bob });
      assert.deepEqual([few.json.entries, few.json.entriesExact], [2, true]);
    });
  });
}
