/**
 * Job searches (POST /jobs/search), the summary (GET /jobs/summary) and sorted listings, through curl and
 * the CLI, with the visibility rules of GET /jobs.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startJobsService } from './helpers.ts';
import { countable, countedSummary, foldJobCounts } from '../../src/jobs/counts.ts';
import { summarizeJobs, type Condition } from '../../src/jobs/search.ts';
import type { AttributeName } from '../../src/jobs/model.ts';

const run = promisify(execFile);

/** A search page, or an error answer. */
interface SearchJson {
  jobs: Record<string, unknown>[];
  nextCursor?: string | null;
  error_description?: string;
}
const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

for (const { dialect, skip } of await dialects()) {
  describe(`job search, summary and sort (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let admin: string;
    const mine: number[] = [];
    before(async () => {
      // Nothing runs: the jobs wait, except those killed below.
      svc = await startJobsService(dialect, { scheduler: { enabled: false } });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
      admin = await svc.token('admin', 'dirigo_admin');
      for (const [i, group] of ['calib', 'calib', 'calib', 'reco', 'reco', 'ana'].entries()) {
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', JobName: `job_${String(i).padStart(2, '0')}`, JobGroup: group } });
        mine.push(res.json.jids[0]);
      }
      for (const jid of mine.slice(0, 2)) assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
      await svc.request('/jobs', { method: 'POST', token: bob, json: { Executable: '/bin/true', JobName: 'bobs', JobGroup: 'calib' } });
    });
    after(() => svc?.close());

    async function curlSearch(token: string, body: unknown): Promise<{ status: number; json: SearchJson }> {
      const { stdout } = await run('curl', ['-s', '--cacert', svc.pki.caFile, '-H', `Authorization: Bearer ${token}`, '-H', 'content-type: application/json', '-d', JSON.stringify(body), '-w', '\n%{http_code}', `${svc.url}/jobs/search`]);
      const nl = stdout.lastIndexOf('\n');
      return { status: Number(stdout.slice(nl + 1)), json: JSON.parse(stdout.slice(0, nl)) };
    }

    it('counts per combination of attributes, with restrictions and visibility', async () => {
      const res = await svc.request('/jobs/summary?groupBy=Status&groupBy=JobGroup', { token: alice });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.total, 6);
      const counts = Object.fromEntries(res.json.summary.map((r: Record<string, unknown>) => [`${r.Status}/${r.JobGroup}`, r.count]));
      assert.deepEqual(counts, { 'Killed/calib': 2, 'Waiting/calib': 1, 'Waiting/reco': 2, 'Waiting/ana': 1 });
      assert.equal(res.json.summary[0].count, 2, 'largest first');
      const bySite = await svc.request('/jobs/summary?groupBy=Status&groupBy=Site', { token: alice });
      assert.deepEqual(Object.fromEntries(bySite.json.summary.map((r: Record<string, unknown>) => [`${r.Status}/${r.Site}`, r.count])), { 'Killed/ANY': 2, 'Waiting/ANY': 4 });
      const restricted = await svc.request('/jobs/summary?groupBy=Status&JobGroup=calib', { token: alice });
      assert.deepEqual(restricted.json.summary.map((r: Record<string, unknown>) => [r.Status, r.count]).sort(), [['Killed', 2], ['Waiting', 1]]);
      const everyone = await svc.request('/jobs/summary?groupBy=Owner&allOwners=true', { token: admin });
      assert.deepEqual(Object.fromEntries(everyone.json.summary.map((r: Record<string, unknown>) => [r.Owner, r.count])), { alice: 6, bob: 1 });
      const bobSees = await svc.request('/jobs/summary?groupBy=Owner&allOwners=true', { token: bob });
      assert.deepEqual(bobSees.json.summary.map((r: Record<string, unknown>) => r.Owner), ['bob']);
      for (const [query, message] of [
        ['', /groupBy: name one to four/],
        ['groupBy=Nope', /groupBy: 'Nope' is not a job attribute/],
        ['groupBy=Status&groupBy=Status', /named twice/],
        ['groupBy=Status&Status=Bogus', /'Bogus' is not a job status/],
      ] as const) {
        const bad = await svc.request(`/jobs/summary?${query}`, { token: alice });
        assert.equal(bad.status, 400, query);
        assert.match(bad.json.error_description, message);
      }
    });

    it('answers summaries from the maintained counts exactly as from the jobs themselves, before and after the fold', async () => {
      const norm = (r: { total: number; truncated: boolean; summary: Record<string, unknown>[] }) => ({ total: r.total, truncated: r.truncated, summary: r.summary.map((x) => JSON.stringify(x)).sort() });
      const visibilities = [{ kind: 'all' as const }, { kind: 'own' as const, owner: 'alice' }, { kind: 'group' as const, owner: 'bob', group: 'dirigo_user' }];
      const questions: [AttributeName[], Condition[]][] = [
        [['Status'], []],
        [['Status', 'Site'], []],
        [['Owner', 'JobGroup'], [{ parameter: 'Status', operator: 'in', values: ['Waiting', 'Killed'] }]],
        [['JobType'], [{ parameter: 'JobGroup', operator: 'eq', value: 'calib' }]],
      ];
      for (const fold of [false, true]) {
        if (fold) await foldJobCounts(svc.ctx.db, svc.ctx.dialect);
        for (const visibility of visibilities) {
          for (const [groupBy, conditions] of questions) {
            assert.ok(countable(groupBy, conditions));
            // Cut to one group too: both paths keep the same largest group (ties in the values' order).
            for (const maxGroups of [1000, 1]) {
              const counted = await countedSummary(svc.ctx.db, visibility, conditions, groupBy, maxGroups);
              const live = await summarizeJobs(svc.ctx.db, visibility, conditions, groupBy, maxGroups);
              assert.deepEqual(norm(counted), norm(live), `${fold ? 'folded' : 'deltas'}, ${visibility.kind}, ${groupBy.join('+')}, at most ${maxGroups}`);
            }
          }
        }
      }
      const rows = async (table: 'job_counts' | 'job_count_deltas') => Number((await svc.ctx.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      assert.equal(await rows('job_count_deltas'), 0, 'nothing changes here (no scheduler): the fold took every delta');
      assert.ok((await rows('job_counts')) > 0);
    });

    it('searches with every operator, over curl', async () => {
      const ids = async (search: unknown[], token = alice) => {
        const res = await curlSearch(token, { search, parameters: ['JobID'], sort: [{ parameter: 'JobID', direction: 'asc' }] });
        assert.equal(res.status, 200, JSON.stringify(res.json));
        return res.json.jobs.map((j) => j.JobID);
      };
      assert.deepEqual(await ids([{ parameter: 'JobGroup', operator: 'eq', value: 'reco' }]), mine.slice(3, 5));
      assert.deepEqual(await ids([{ parameter: 'JobGroup', operator: 'neq', value: 'calib' }]), mine.slice(3));
      assert.deepEqual(await ids([{ parameter: 'Status', operator: 'in', values: ['Killed'] }]), mine.slice(0, 2));
      assert.deepEqual(await ids([{ parameter: 'JobGroup', operator: 'not in', values: ['calib', 'reco'] }]), [mine[5]]);
      assert.deepEqual(await ids([{ parameter: 'JobID', operator: 'gt', value: mine[3] }, { parameter: 'JobID', operator: 'le', value: mine[5] }]), mine.slice(4, 6));
      assert.deepEqual(await ids([{ parameter: 'JobID', operator: 'lt', value: mine[1] }, { parameter: 'JobID', operator: 'ge', value: mine[0] }]), [mine[0]]);
      assert.deepEqual(await ids([{ parameter: 'JobName', operator: 'like', value: 'job_0%' }]), mine);
      const now = new Date();
      const hourAgo = new Date(now.getTime() - 3600_000).toISOString();
      assert.deepEqual(await ids([{ parameter: 'SubmissionTime', operator: 'ge', value: hourAgo }, { parameter: 'SubmissionTime', operator: 'lt', value: '2999-01-01' }]), mine);
      assert.deepEqual(await ids([{ parameter: 'SubmissionTime', operator: 'lt', value: hourAgo }]), []);
      // Visibility: bob's own, and with allOwners only what he may see.
      const bobs = await curlSearch(bob, { allOwners: true, parameters: ['Owner'] });
      assert.deepEqual(bobs.json.jobs, [{ Owner: 'bob' }]);
      const all = await curlSearch(admin, { allOwners: true, search: [{ parameter: 'JobGroup', operator: 'eq', value: 'calib' }], parameters: ['Owner', 'JobGroup'] });
      assert.equal(all.json.jobs.length, 4);
      // The job monitor's other filters: Owner and Site.
      const byOwner = await curlSearch(admin, { allOwners: true, search: [{ parameter: 'Owner', operator: 'in', values: ['bob'] }, { parameter: 'Site', operator: 'eq', value: 'ANY' }], parameters: ['Owner', 'JobName'] });
      assert.deepEqual(byOwner.json.jobs, [{ Owner: 'bob', JobName: 'bobs' }]);
    });

    it('pages by cursor and by offset to the same rows, in the asked order, with only the asked attributes', async () => {
      const sort = [{ parameter: 'JobGroup', direction: 'asc' }, { parameter: 'JobName', direction: 'desc' }];
      const seen: Record<string, unknown>[] = [];
      let cursor: string | null | undefined;
      let pages = 0;
      do {
        const res = await curlSearch(alice, { parameters: ['JobName', 'JobGroup'], sort, page: { size: 4, ...(cursor ? { cursor } : {}) } });
        assert.equal(res.status, 200, JSON.stringify(res.json));
        seen.push(...res.json.jobs);
        cursor = res.json.nextCursor;
        pages++;
      } while (cursor);
      assert.equal(pages, 2);
      assert.deepEqual(seen.map((j) => `${j.JobGroup}/${j.JobName}`), ['ana/job_05', 'calib/job_02', 'calib/job_01', 'calib/job_00', 'reco/job_04', 'reco/job_03']);
      assert.deepEqual(Object.keys(seen[0]!).sort(), ['JobGroup', 'JobName']);
      const second = await curlSearch(alice, { parameters: ['JobName', 'JobGroup'], sort, page: { size: 4, offset: 4 } });
      assert.deepEqual(second.json.jobs, seen.slice(4));
      // Nullable keys (StartExecTime: nothing started) sort and page as well.
      const byStart = await curlSearch(alice, { parameters: ['JobID'], sort: [{ parameter: 'StartExecTime' }], page: { size: 5 } });
      const rest = await curlSearch(alice, { parameters: ['JobID'], sort: [{ parameter: 'StartExecTime' }], page: { size: 5, cursor: byStart.json.nextCursor } });
      assert.equal(new Set([...byStart.json.jobs, ...rest.json.jobs].map((j) => j.JobID)).size, 6);
    });

    it('refuses bad searches with a 400 naming the problem', async () => {
      const cases: [unknown, RegExp][] = [
        [{ search: [{ parameter: 'Nope', operator: 'eq', value: 1 }] }, /parameter/],
        [{ search: [{ parameter: 'JobID', operator: 'approx', value: 1 }] }, /operator/],
        [{ search: [{ parameter: 'JobID', operator: 'eq', value: 'x' }] }, /search\[0\]: JobID takes integers/],
        [{ search: [{ parameter: 'JobID', operator: 'in', value: 3 }] }, /'in' takes a non-empty list in 'values'/],
        [{ search: [{ parameter: 'JobID', operator: 'eq' }] }, /'eq' takes one value/],
        [{ search: [{ parameter: 'JobID', operator: 'like', value: '1%' }] }, /'like' takes a string attribute/],
        [{ search: [{ parameter: 'SubmissionTime', operator: 'gt', value: 'yesterday' }] }, /ISO 8601/],
        [{ search: [{ parameter: 'Status', operator: 'eq', value: 'Bogus' }] }, /not a job status/],
        [{ page: { cursor: 'bm9wZQ' } }, /not a cursor of this search/],
        [{ page: { cursor: 'x', offset: 3 } }, /offset or cursor, not both/],
        [{ sort: [{ parameter: 'JobID' }, { parameter: 'JobID' }] }, /named twice/],
        [{ page: { size: 5000 } }, /size/],
      ];
      for (const [body, message] of cases) {
        const res = await curlSearch(alice, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.match(String(res.json.error_description), message, JSON.stringify(body));
      }
    });

    it('sorts GET /jobs, and the CLI lists sorted and summarises', async () => {
      const res = await svc.request('/jobs?sort=JobGroup&sort=-JobID', { token: alice });
      assert.deepEqual(res.json.jobs.map((j: { JobID: number }) => j.JobID), [mine[5], mine[2], mine[1], mine[0], mine[4], mine[3]]);
      const bad = await svc.request('/jobs?sort=Bogus', { token: alice });
      assert.equal(bad.status, 400);
      assert.match(bad.json.error_description, /sort: 'Bogus' is not a job attribute/);
      const work = mkdtempSync(join(tmpdir(), 'dirigo-search-cli-'));
      const u = svc.pki.users.alice!;
      const conn = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP];
      const dirigo = (args: string[]) => run(process.execPath, [BIN, 'jobs', ...args, ...conn], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work } });
      const listed = JSON.parse((await dirigo(['list', '--sort', 'JobName', '--json'])).stdout);
      assert.deepEqual(listed.jobs.map((j: { JobName: string }) => j.JobName), ['job_00', 'job_01', 'job_02', 'job_03', 'job_04', 'job_05']);
      const searched = JSON.parse((await dirigo(['search', 'JobGroup=calib|reco', `JobID>=${mine[1]}`, 'JobName~job_%', '--column', 'JobID', '--column', 'JobGroup', '--sort=-JobID', '--json'])).stdout);
      assert.deepEqual(searched, [mine[4], mine[3], mine[2], mine[1]].map((JobID, i) => ({ JobID, JobGroup: i < 2 ? 'reco' : 'calib' })));
      const paged = await dirigo(['search', 'Status!=Killed', '--max', '2']);
      assert.match(paged.stdout, /2 job\(s\); more match \(raise --max, now 2\)/);
      const wrong = await dirigo(['search', 'Colour=red']).catch((err: { code: number; stderr: string }) => err);
      assert.equal((wrong as { code: number }).code, 2);
      assert.match((wrong as { stderr: string }).stderr, /'Colour' is not a job attribute/);
      const summary = await dirigo(['summary', '--group-by', 'Status', '--attr', 'JobGroup=calib']);
      assert.match(summary.stdout, /Status\s+Jobs/);
      assert.match(summary.stdout, /Killed\s+2/);
      assert.match(summary.stdout, /3 job\(s\)/);
    });
  });
}
