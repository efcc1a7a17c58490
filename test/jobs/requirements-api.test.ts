/**
 * Requirements checked at submission through the HTTP API, JSON and JDL: a 400 that names the key for an
 * impossible range, a bad platform or tag, a Requirements expression, BannedSites that ban every site;
 * good requirements are stored as the job's attributes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService } from './helpers.ts';

const BAD: [string, Record<string, unknown>, RegExp][] = [
  ['an impossible range', { MinNumberOfProcessors: 4, MaxNumberOfProcessors: 2 }, /MaxNumberOfProcessors \(2\) is below MinNumberOfProcessors \(4\)/],
  ['both forms', { NumberOfProcessors: 2, MaxNumberOfProcessors: 4 }, /NumberOfProcessors/],
  ['zero processors', { NumberOfProcessors: 0 }, /NumberOfProcessors must be an integer/],
  ['a bad platform', { Platform: 'Linux x86_64' }, /Platform "Linux x86_64" is not a platform name/],
  ['a bad tag', { Tags: ['GPU', 'two words'] }, /Tags "two words" is not a tag/],
  ['negative memory', { MaxRAM: -1 }, /MaxRAM must be an integer/],
  ['a Requirements expression', { Requirements: 'other.Site == "Local"' }, /Requirements expressions are not evaluated/],
  ['BannedSites banning all', { BannedSites: ['Local', 'Other'] }, /BannedSites bans every site/],
  ['an unknown banned site', { BannedSites: 'Nowhere' }, /BannedSites names the unknown site 'Nowhere'/],
];

const JDL: [string, string, RegExp][] = [
  ['an impossible range', 'MinNumberOfProcessors = 8; MaxNumberOfProcessors = 4;', /MaxNumberOfProcessors \(4\) is below MinNumberOfProcessors \(8\)/],
  ['a bad platform', 'Platform = "Linux/x86";', /Platform "Linux\/x86" is not a platform name/],
  ['a Requirements expression', 'Requirements = "other.Site == \\"Local\\"";', /Requirements/],
  ['BannedSites banning all', 'BannedSites = {"Local", "Other"};', /BannedSites bans every site/],
];

for (const { dialect, skip } of await dialects()) {
  describe(`requirements at submission (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false }, sites: [{ name: 'Local', type: 'local', slots: 1 }, { name: 'Other', type: 'local', slots: 1 }] });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    for (const [what, manifest, message] of BAD) {
      it(`answers 400 naming the key for ${what} (JSON)`, async () => {
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', ...manifest } });
        assert.equal(res.status, 400, res.text);
        assert.match(String(res.json.error_description), message);
      });
    }

    for (const [what, lines, message] of JDL) {
      it(`answers 400 naming the key for ${what} (JDL)`, async () => {
        const body = `[\n  Executable = "/bin/true";\n  ${lines}\n]\n`;
        const res = await svc.request('/jobs', { method: 'POST', token: alice, body, headers: { 'content-type': 'text/x-jdl' } });
        assert.equal(res.status, 400, res.text);
        assert.match(String(res.json.error_description), message);
      });
    }

    it('stores good requirements as the job\'s attributes, with a task queue', async () => {
      const jdl = '[\n  Executable = "/bin/true";\n  MinNumberOfProcessors = 2;\n  MaxNumberOfProcessors = 4;\n  MaxRAM = 2048;\n  Tags = {"GPU"};\n  Platform = "Linux_x86_64_glibc-2.17";\n  BannedSites = "Other";\n]\n';
      const res = await svc.request('/jobs', { method: 'POST', token: alice, body: jdl, headers: { 'content-type': 'text/x-jdl' } });
      assert.equal(res.status, 201, res.text);
      const jid = res.json.jids[0] as number;
      const db = svc.ctx.db;
      const row = await db.selectFrom('jobs').select(['processors', 'max_ram', 'tags', 'platform', 'tq_id']).where('job_id', '=', jid).executeTakeFirstOrThrow();
      assert.deepEqual([row.processors, row.max_ram, row.tags, row.platform], [2, 2048, 'GPU', 'Linux_x86_64_glibc-2.17']);
      const tq = await db.selectFrom('task_queues').selectAll().where('tq_id', '=', Number(row.tq_id)).executeTakeFirstOrThrow();
      assert.deepEqual([tq.owner, tq.min_processors, tq.max_processors, tq.tags, tq.platforms, tq.banned_sites, tq.sites], ['alice', 2, 4, ',GPU,', ',Linux_x86_64_glibc-2.17,', ',Other,', null]);
    });
  });
}
