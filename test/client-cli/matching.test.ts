/**
 * Issue 34 through the CLI against a real server: `dirigo jobs why JID` (GET /jobs/{jid}/matching) names
 * what holds a job back per site, `dirigo jobs shares` (GET /jobs/shares) lists groups and users, and
 * search and summary take the requirement attributes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo jobs why, shares, and the requirement attributes (${dialect})`, { skip }, () => {
    let svc: TestService;
    let work: string;
    let pinned: number;
    let big: number;
    before(async () => {
      // Nothing is matched: the jobs wait.
      svc = await startJobsService(dialect, { scheduler: { enabled: false }, sites: [{ name: 'Local', type: 'local', slots: 2 }, { name: 'Pool', type: 'agents' }] });
      work = mkdtempSync(join(tmpdir(), 'dirigo-why-'));
      const alice = await svc.token('alice');
      const res = await svc.request('/jobs', {
        method: 'POST',
        token: alice,
        json: [
          { Executable: '/bin/true', JobName: 'pinned', Sites: ['Pool'] },
          { Executable: '/bin/true', JobName: 'big', NumberOfProcessors: 6, Tags: ['GPU'], BannedSites: ['Pool'] },
        ],
      });
      assert.equal(res.status, 201, res.text);
      [pinned, big] = res.json.jids;
      assert.equal((await svc.request('/jobs', { method: 'POST', token: await svc.token('bob'), json: { Executable: '/bin/true' } })).status, 201);
    });
    after(() => svc?.close());

    function dirigo(args: string[], user = 'alice'): Promise<{ code: number; stdout: string; stderr: string }> {
      const u = svc.pki.users[user]!;
      const group = user === 'alice' ? ['--group', 'dirigo_user'] : [];
      const conn = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, ...group, '--setup', TEST_SETUP];
      return new Promise((resolve) => {
        execFile(process.execPath, [BIN, 'jobs', ...args, ...conn], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work } }, (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
    }

    it('why: a table per site naming the attribute that holds the job back, and the summary sentence', async () => {
      const why = await dirigo(['why', String(pinned)]);
      assert.equal(why.code, 0, why.stderr);
      assert.match(why.stdout, new RegExp(`^Job ${pinned}: Waiting`));
      assert.match(why.stdout, /^Site\s+Resource\s+Kind\s+Eligible\s+Attribute\s+Why not$/m);
      // Local is not among the sites it may run at; the reason names the attribute.
      assert.match(why.stdout, /^Local\s+\S+\s+local\s+no\s+Sites\s+the job may run only at Pool/m);
      assert.match(why.stdout, /^Pool\s+\S+\s+agents\s/m);
      const json = await dirigo(['why', String(pinned), '--json']);
      const answer = JSON.parse(json.stdout);
      assert.equal(answer.JobID, pinned);
      // What the job asks for rules Local out (besides a status line while Local has not described itself yet).
      const local = answer.resources.find((r: { site: string }) => r.site === 'Local');
      assert.deepEqual(local.holdBack.filter((h: { kind: string }) => h.kind === 'requirement').map((h: { attribute: string }) => h.attribute), ['Sites']);
      // The last line is the answer's summary.
      assert.equal(why.stdout.trimEnd().split('\n').at(-1), answer.summary);
      const banned = JSON.parse((await dirigo(['why', String(big), '--json'])).stdout);
      const pool = banned.resources.find((r: { site: string }) => r.site === 'Pool');
      assert.equal(pool.eligible, false);
      assert.ok(pool.holdBack.some((h: { attribute: string }) => h.attribute === 'BannedSites'));
      const text = await dirigo(['why', String(big)]);
      assert.match(text.stdout, /^Requirements: NumberOfProcessors 6; Tags GPU; BannedSites Pool$/m);
    });

    it('why: a job one may not see is not found (exit 4), a bad id a usage error (exit 2)', async () => {
      const other = await dirigo(['why', String(pinned)], 'bob');
      assert.equal(other.code, 4, other.stderr);
      assert.match(other.stderr, /not found|does not exist/i);
      assert.equal((await dirigo(['why', 'x'])).code, 2);
      assert.equal((await dirigo(['why', '1', '2'])).code, 2);
    });

    it('shares: groups and users with share, target, actual, Waiting and running; --json', async () => {
      const shares = await dirigo(['shares']);
      assert.equal(shares.code, 0, shares.stderr);
      assert.match(shares.stdout, /^Group \/ user\s+Share\s+Target\s+Actual\s+Waiting\s+Running$/m);
      assert.match(shares.stdout, /^dirigo_user\s+1\s+[\d.]+ %\s+[\d.]+ %\s+3\s+0$/m, 'alice and bob submitted in dirigo_user');
      assert.match(shares.stdout, /^ {2}alice\s+\S+\s+[\d.]+ %\s+[\d.]+ %\s+2\s+0$/m);
      assert.match(shares.stdout, /^ {2}bob\s+\S+\s+[\d.]+ %\s+[\d.]+ %\s+1\s+0$/m);
      assert.match(shares.stdout, /counts half after /);
      const json = JSON.parse((await dirigo(['shares', '--json'])).stdout);
      const group = json.groups.find((g: { group: string }) => g.group === 'dirigo_user');
      assert.equal(group.waiting, 3);
      assert.deepEqual(group.users.map((u: { user: string }) => u.user).sort(), ['alice', 'bob']);
      assert.ok(json.halfLifeSeconds > 0);
    });

    it('search and summary take the requirement attributes', async () => {
      const search = await dirigo(['search', 'NumberOfProcessors>=2', '--column', 'JobID', '--column', 'NumberOfProcessors', '--column', 'Tags', '--json']);
      assert.equal(search.code, 0, search.stderr);
      assert.deepEqual(JSON.parse(search.stdout), [{ JobID: big, NumberOfProcessors: 6, Tags: 'GPU' }]);
      const summary = await dirigo(['summary', '--group-by', 'NumberOfProcessors', '--group-by', 'Tags']);
      assert.equal(summary.code, 0, summary.stderr);
      assert.match(summary.stdout, /^NumberOfProcessors\s+Tags\s+Jobs$/m);
      assert.match(summary.stdout, /^6\s+GPU\s+1$/m);
      const show = await dirigo(['show', String(big)]);
      assert.match(show.stdout, /^NumberOfProcessors 6$/m);
      assert.match(show.stdout, /^TaskQueueID\s/m);
      const list = await dirigo(['list', '--attr', 'NumberOfProcessors=6', '--json']);
      assert.deepEqual(JSON.parse(list.stdout).jobs.map((j: { JobID: number }) => j.JobID), [big]);
    });
  });
}
