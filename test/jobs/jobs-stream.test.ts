/**
 * The streamed full listing: GET /jobs/stream answers every job the GET /jobs query matches, one JobRecord
 * per line (NDJSON), in the pages' order, with their restrictions and visibility; read in
 * keyset chunks (store.ts streamJobs), checked here across chunk boundaries both over HTTP (more jobs than
 * one chunk) and with tiny chunks on the store itself; and through curl over TLS.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startListingFixture } from './helpers.ts';
import { STREAM_CHUNK, streamJobs, type ListQuery } from '../../src/jobs/store.ts';
import type { Visibility } from '../../src/jobs/privileges.ts';
import type { SortKey } from '../../src/jobs/search.ts';

const run = promisify(execFile);

for (const { dialect, skip } of await dialects()) {
  describe(`jobs: the streamed full listing, GET /jobs/stream (${dialect})`, { skip }, () => {
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

    /** The streamed listing's records, each line checked to be one JSON object. */
    const stream = async (query: string, token: string) => {
      const res = await svc.request(`/jobs/stream${query}`, { token, headers: { accept: 'application/x-ndjson' } });
      assert.equal(res.status, 200, res.text);
      assert.match(String(res.headers['content-type']), /^application\/x-ndjson/);
      assert.ok(res.text === '' || res.text.endsWith('\n'), 'every line ends with a newline');
      return res.text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { JobID: number } & Record<string, string | number | null>);
    };
    const ids = (jobs: { JobID: unknown }[]) => jobs.map((j) => j.JobID as number);
    const lines = (text: string) => text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { JobID: number });
    /** The same listing page by page (JSON, cursor), as a client of the pages would read it. */
    const paged = async (query: string, token: string) => {
      const seen: number[] = [];
      let url = `/jobs?maxJobs=5${query}`;
      for (;;) {
        const page = await svc.request(url, { token });
        assert.equal(page.status, 200, page.text);
        seen.push(...ids(page.json.jobs));
        if (page.json.nextCursor === null) return seen;
        url = `/jobs?maxJobs=5${query}&cursor=${encodeURIComponent(page.json.nextCursor)}`;
      }
    };

    it('writes text the way JSON pages do: quotes, backslashes, control characters and non-ASCII names', async () => {
      const name = 'q"uote\\ tab\t nl\n ctl\u0001 ünïcödé 😀 </script>';
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', JobName: name, JobGroup: 'odd' } });
      assert.equal(res.status, 201, res.text);
      const jobs = await stream('?JobGroup=odd', alice);
      assert.equal(jobs.length, 1);
      assert.equal(jobs[0]!.JobName, name);
      assert.deepEqual(jobs, (await svc.request('/jobs?JobGroup=odd', { token: alice })).json.jobs);
      aliceIds.push(...(res.json.jids as number[]));
    });

    it('answers every visible job once, newest first, with the same records as the pages', async () => {
      const jobs = await stream('', alice);
      assert.deepEqual(ids(jobs), [...aliceIds].reverse());
      const page = await svc.request('/jobs', { token: alice });
      assert.deepEqual(jobs, page.json.jobs, 'the same JobRecord per job as a JSON page');
      // Every attribute (model.ts ATTRIBUTES), the requirements (issue 34) and the workflow attributes (issue 36) among them.
      assert.equal(Object.keys(jobs[0]!).length, 31);
    });

    it('keeps the restrictions, sort order, maxJobs, startJob and cursor of the pages', async () => {
      for (const query of ['&Status=Waiting', '&Status=Waiting&Status=Killed', '&JobGroup=g0&Status=Killed', '&sort=JobGroup&sort=-UserPriority', '&sort=-JobName', '&UserPriority=3&sort=SubmissionTime']) {
        assert.deepEqual(ids(await stream(`?${query.slice(1)}`, alice)), await paged(query, alice), query);
      }
      assert.deepEqual(ids(await stream('?maxJobs=3', alice)), [...aliceIds].reverse().slice(0, 3));
      assert.deepEqual(ids(await stream('?startJob=4&maxJobs=5', alice)), [...aliceIds].reverse().slice(4, 9));
      const first = await svc.request('/jobs?maxJobs=5&sort=JobName', { token: alice });
      const rest = await stream(`?sort=JobName&cursor=${encodeURIComponent(first.json.nextCursor)}`, alice);
      assert.deepEqual([...ids(first.json.jobs), ...ids(rest)], await paged('&sort=JobName', alice));
      assert.deepEqual(await stream('?Status=Done', alice), [], 'nothing matches: an empty body');
    });

    it('shows only what the caller may see: own jobs, everyone for an administrator, own and group for a JobSharing member', async () => {
      assert.deepEqual(ids(await stream('?allOwners=true', bob)), [...bobIds].reverse());
      assert.deepEqual(ids(await stream(`?JobID=${aliceIds[4]}&JobID=${bobIds[0]}`, alice)), [aliceIds[4]], 'bob’s job stays hidden even by id');
      assert.deepEqual(await stream('', admin), [], 'an administrator’s own listing');
      assert.deepEqual(ids(await stream('?allOwners=true', admin)), [...aliceIds, ...bobIds].sort((x, y) => y - x));
      const aliceProd = await svc.token('alice', 'dirigo_prod');
      const carolProd = await svc.token('carol', 'dirigo_prod');
      const submit = async (token: string, names: string[]) =>
        (await svc.request('/jobs', { method: 'POST', token, json: names.map((JobName) => ({ Executable: '/bin/true', JobName })) })).json.jids as number[];
      const shared = await submit(aliceProd, ['p0', 'p1', 'p2']);
      const carols = await submit(carolProd, ['c0', 'c1']);
      for (const sort of ['', '&sort=JobName', '&sort=-JobName']) {
        const streamed = ids(await stream(`?allOwners=true${sort}`, carolProd));
        assert.deepEqual(streamed, await paged(`&allOwners=true${sort}`, carolProd), sort);
        assert.deepEqual([...streamed].sort((x, y) => x - y), [...shared, ...carols], `alice’s other jobs stay hidden${sort}`);
      }
    });

    it('reads in keyset chunks: tiny chunks on the store give the same listing for each visibility and order', async () => {
      const cases: [Visibility, string][] = [
        [{ kind: 'own', owner: 'alice' }, 'alice'],
        [{ kind: 'group', owner: 'carol', group: 'dirigo_prod' }, 'carol, JobSharing'],
        [{ kind: 'all' }, 'administrator'],
      ];
      for (const [visibility, label] of cases) {
        const sorts: SortKey[][] = [[], [{ parameter: 'JobName', direction: 'asc' }], [{ parameter: 'UserPriority', direction: 'desc' }], [{ parameter: 'StartExecTime', direction: 'desc' }, { parameter: 'JobGroup' }]];
        for (const sort of sorts) {
          const q: ListQuery = { restrictions: {}, visibility, maxJobs: Number.MAX_SAFE_INTEGER, startJob: 0, sort };
          const whole: number[] = [];
          for await (const chunk of streamJobs(svc.ctx.db, q, 1000)) whole.push(...ids(lines(chunk)));
          for (const size of [1, 2, 3]) {
            const chunked: number[] = [];
            for await (const chunk of streamJobs(svc.ctx.db, q, size)) {
              assert.ok(chunk.endsWith('\n'));
              const jobs = lines(chunk);
              assert.ok(jobs.length <= size && jobs.length > 0);
              chunked.push(...ids(jobs));
            }
            assert.deepEqual(chunked, whole, `${label}, chunks of ${size}, sort ${JSON.stringify(sort)}`);
            const limited: number[] = [];
            for await (const chunk of streamJobs(svc.ctx.db, { ...q, maxJobs: 5, startJob: 1 }, size)) limited.push(...ids(lines(chunk)));
            assert.deepEqual(limited, whole.slice(1, 6), `${label}, startJob 1, maxJobs 5, chunks of ${size}`);
          }
          assert.equal(new Set(whole).size, whole.length, 'each job once');
        }
      }
    });

    it(`crosses chunk boundaries over HTTP: ${STREAM_CHUNK * 2 + 500} more jobs, each once, in order`, async () => {
      const n = STREAM_CHUNK * 2 + 500;
      const series = dialect === 'postgres' ? sql`select generate_series(1, ${sql.lit(n)}) as i` : sql`with recursive s(i) as (select 1 union all select i + 1 from s where i < ${sql.lit(n)}) select i from s`;
      await sql`insert into jobs (job_name, job_group, job_type, owner, owner_dn, owner_group, setup, site, status, minor_status, application_status,
          user_priority, reschedule_counter, submission_time, last_update_time, manifest)
        select 'bulk', '', 'User', 'bob', '/O=Dirigo/OU=Users/CN=bob', 'dirigo_user', 'Dirigo-Test', 'ANY', 'Done', 'generated', 'Unknown', 1, 0,
          '2026-11-25T00:00:00.000Z', '2026-11-25T00:00:00.000Z', '{}' from (${series}) as t`.execute(svc.ctx.db);
      const all = ids(await stream('', bob));
      assert.equal(all.length, n + 2);
      assert.deepEqual(all, [...all].sort((x, y) => y - x), 'newest first');
      assert.equal(new Set(all).size, all.length, 'each job once');
      assert.deepEqual(all.slice(-2), [...bobIds].reverse());
      const oldest = ids(await stream('?sort=JobID&MinorStatus=generated', bob));
      assert.deepEqual(oldest, all.slice(0, n).reverse());
      assert.deepEqual(ids(await stream(`?maxJobs=${STREAM_CHUNK + 1}`, bob)), all.slice(0, STREAM_CHUNK + 1));
    });

    it('a client that goes away mid-listing leaves the server answering the next request', async () => {
      const { request, Agent } = await import('undici');
      const agent = new Agent({ connect: { ca: readFileSync(svc.pki.caFile) } });
      try {
        const res = await request(`${svc.url}/jobs/stream?allOwners=true`, { headers: { authorization: `Bearer ${admin}` }, dispatcher: agent });
        assert.equal(res.statusCode, 200);
        for await (const bytes of res.body) {
          assert.ok((bytes as Buffer).length > 0);
          break; // leaving the loop destroys the body, and with it the connection
        }
      } finally {
        await agent.close();
      }
      assert.equal(ids(await stream('?maxJobs=2', alice)).length, 2);
    });

    it('bad input is a 400 JSON error before anything is streamed; a page of GET /jobs stays at most 1000 jobs', async () => {
      for (const [query, pattern] of [
        ['?maxJobs=0', /maxJobs: must be from 1/],
        ['?maxJobs=x', /maxJobs: 'x' is not an integer/],
        ['?cursor=bm90IGEgY3Vyc29y', /cursor/],
        ['?Status=Nope', /Status: 'Nope' is not a job status/],
        ['?Colour=blue', /'Colour' is not a job attribute/],
        ['?startJob=1&cursor=abc', /startJob or cursor/],
      ] as const) {
        const res = await svc.request(`/jobs/stream${query}`, { token: alice });
        assert.equal(res.status, 400, query);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.match(res.json.error_description, pattern, query);
      }
      const big = await svc.request('/jobs?maxJobs=1001', { token: alice });
      assert.equal(big.status, 400);
      assert.match(big.json.error_description, /maxJobs: must be from 1 to 1000, got 1001/);
      assert.equal((await svc.request('/jobs/stream')).status, 401);
    });

    it('curl over TLS reads the whole listing as NDJSON', async () => {
      const args = ['-sS', '--fail-with-body', '--cacert', svc.pki.caFile, '--oauth2-bearer', alice];
      const { stdout } = await run('curl', [...args, `${svc.url}/jobs/stream?Status=Waiting&Status=Killed&sort=-JobName`]);
      const lines = stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { JobID: number; Owner: string });
      assert.deepEqual(ids(lines), await paged('&Status=Waiting&Status=Killed&sort=-JobName', alice));
      assert.ok(lines.every((j) => j.Owner === 'alice'));
      const bad = await run('curl', [...args.filter((a) => a !== '--fail-with-body'), '-w', '\n%{http_code}', `${svc.url}/jobs/stream?maxJobs=-1`]);
      const nl = bad.stdout.lastIndexOf('\n');
      assert.equal(bad.stdout.slice(nl + 1), '400');
      assert.equal((JSON.parse(bad.stdout.slice(0, nl)) as { error: string }).error, 'invalid_request');
    });
  });
}
