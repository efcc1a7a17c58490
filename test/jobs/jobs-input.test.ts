import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { postMultipart, startJobsService } from './helpers.ts';

async function jobCount(svc: TestService): Promise<number> {
  const r = await svc.ctx.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

function storedSandboxes(svc: TestService): number {
  const dir = join(svc.dataDir, 'sandboxes');
  let n = 0;
  try {
    for (const sub of readdirSync(dir)) if (sub !== 'tmp') n += readdirSync(join(dir, sub)).length;
  } catch {
    // no store yet
  }
  return n;
}

for (const { dialect, skip } of await dialects()) {
  describe(`jobs: bad input is refused with a clear error and nothing is stored (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      // Scheduler off: nothing runs, so counts only move by submissions. Small limits for the 413 cases.
      svc = await startJobsService(dialect, { scheduler: { enabled: false }, sandbox: { maxFileSize: 1000, maxSandboxSize: 1500 }, maxBulk: 5, jsonBodyLimit: 4096 });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    const jsonCases: [string, string, number, RegExp][] = [
      ['not JSON', '{"Executable": ', 400, /JSON/i],
      ['a string', '"hello"', 400, /JSON object/],
      ['a number', '42', 400, /JSON object/],
      ['an empty array', '[]', 400, /empty/],
      ['no Executable', '{"Arguments": "x"}', 400, /Executable is required/],
      ['empty Executable', '{"Executable": ""}', 400, /Executable/],
      ['Arguments not a string', '{"Executable": "/bin/true", "Arguments": ["a"]}', 400, /Arguments must be a string/],
      ['Arguments unterminated', `{"Executable": "/bin/true", "Arguments": "'oops"}`, 400, /unterminated single quote/],
      ['Sites not an array', '{"Executable": "/bin/true", "Sites": "Local"}', 400, /Sites must be an array of strings/],
      ['Sites with a number', '{"Executable": "/bin/true", "Sites": [1]}', 400, /Sites must be an array of strings/],
      ['unknown site', '{"Executable": "/bin/true", "Sites": ["Mars"]}', 400, /unknown site 'Mars'/],
      // JobType's column is varchar(64): a longer one was a 500 on PostgreSQL (SQLite does not enforce lengths).
      ['JobType too long', JSON.stringify({ Executable: '/bin/true', JobType: 't'.repeat(65) }), 400, /JobType must be a string of at most 64 characters/],
      ['JobName too long', JSON.stringify({ Executable: '/bin/true', JobName: 'n'.repeat(257) }), 400, /JobName must be a string of at most 256 characters/],
      ['Priority too high', '{"Executable": "/bin/true", "Priority": 11}', 400, /Priority must be an integer from 0 to 10/],
      ['Priority negative', '{"Executable": "/bin/true", "Priority": -1}', 400, /Priority/],
      ['Priority not integer', '{"Executable": "/bin/true", "Priority": 2.5}', 400, /Priority/],
      ['CPUTime zero', '{"Executable": "/bin/true", "CPUTime": 0}', 400, /CPUTime must be a positive integer/],
      ['CPUTime string', '{"Executable": "/bin/true", "CPUTime": "10"}', 400, /CPUTime must be a positive integer/],
      ['Environment not object', '{"Executable": "/bin/true", "Environment": "A=1"}', 400, /Environment must be an object/],
      ['Environment bad name', '{"Executable": "/bin/true", "Environment": {"1A": "x"}}', 400, /not a valid variable name/],
      ['StdOutput a path', '{"Executable": "/bin/true", "StdOutput": "../x"}', 400, /StdOutput/],
      ['OutputSandbox escaping', '{"Executable": "/bin/true", "OutputSandbox": ["../*"]}', 400, /OutputSandbox/],
      ['InputSandbox not uploaded', '{"Executable": "/bin/true", "InputSandbox": ["data.txt"]}', 400, /not uploaded/],
      ['bulk with one bad manifest', '[{"Executable": "/bin/true"}, {"Executable": "/bin/true"}, {"Priority": 3}]', 400, /manifest\[2\]: Executable is required/],
      ['bulk over maxBulk', JSON.stringify(Array.from({ length: 6 }, () => ({ Executable: '/bin/true' }))), 400, /at most 5 manifests/],
    ];
    for (const [name, body, status, message] of jsonCases) {
      it(`POST /jobs with ${name} → ${status}`, async () => {
        const before = await jobCount(svc);
        const res = await svc.request('/jobs', { method: 'POST', token: alice, body, headers: { 'content-type': 'application/json' } });
        assert.equal(res.status, status, res.text);
        assert.equal(res.json.error, 'invalid_request');
        assert.match(res.json.error_description, message);
        assert.equal(await jobCount(svc), before, 'no job was stored');
      });
    }

    it('POST /jobs with a JobName or JobGroup that %j would make longer than its column → 400', async () => {
      // %j becomes the job id after the check: with ids of 6 digits, 254 characters and %j were 260 once
      // filled, past varchar(256) (a 500 on PostgreSQL, stored whole by SQLite).
      const { sql } = await import('kysely');
      if (dialect === 'postgres') await sql`select setval(pg_get_serial_sequence('jobs', 'job_id'), 100000)`.execute(svc.ctx.db);
      else {
        await sql`delete from sqlite_sequence where name = 'jobs'`.execute(svc.ctx.db);
        await sql`insert into sqlite_sequence (name, seq) values ('jobs', 100000)`.execute(svc.ctx.db);
      }
      for (const [key, value] of [['JobName', `${'n'.repeat(254)}%j`], ['JobGroup', `%j${'g'.repeat(250)}`]] as const) {
        const before = await jobCount(svc);
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', [key]: value } });
        assert.equal(res.status, 400, `${key}: ${res.text}`);
        assert.match(res.json.error_description, new RegExp(`${key} must be a string of at most 256 characters.*%j`));
        assert.equal(await jobCount(svc), before, 'no job was stored');
      }
      // Within the limit once filled, it is taken.
      const fits = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', JobName: `${'n'.repeat(200)}%j` } });
      assert.equal(fits.status, 201, fits.text);
      const row = await svc.ctx.db.selectFrom('jobs').select(['job_id', 'job_name']).where('job_id', '=', fits.json.jids[0]).executeTakeFirstOrThrow();
      assert.equal(row.job_name, `${'n'.repeat(200)}${row.job_id}`);
    });

    it('POST /jobs with an unsupported content type → 415', async () => {
      const res = await svc.request('/jobs', { method: 'POST', token: alice, body: 'Executable=/bin/true', headers: { 'content-type': 'text/plain' } });
      assert.equal(res.status, 415, res.text);
    });

    it('POST /jobs with a JSON body over jobs.jsonBodyLimit → 413', async () => {
      const before = await jobCount(svc);
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', Padding: 'x'.repeat(5000) } });
      assert.equal(res.status, 413, res.text);
      assert.equal(res.json.error, 'payload_too_large');
      assert.equal(await jobCount(svc), before);
    });

    it('honours capability scopes: compute.read lists but cannot submit or kill; compute.create submits but cannot list', async () => {
      const scoped = async (scope: string) => {
        const r = await svc.request(`/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=Dirigo-Test&scope=${scope}`, { as: 'alice' });
        assert.equal(r.status, 200, r.text);
        return r.json.access_token as string;
      };
      const reader = await scoped('compute.read');
      const creator = await scoped('compute.create');
      const created = await svc.request('/jobs', { method: 'POST', token: creator, json: { Executable: '/bin/true' } });
      assert.equal(created.status, 201, created.text);
      const jid = created.json.jids[0];
      assert.equal((await svc.request('/jobs', { token: reader })).status, 200);
      assert.equal((await svc.request(`/jobs/${jid}`, { token: reader })).status, 200);
      const denied: [string, string, string][] = [
        ['POST', '/jobs', reader],
        ['DELETE', `/jobs/${jid}`, reader],
        ['GET', '/jobs', creator],
        ['GET', `/jobs/${jid}/manifest`, creator],
        ['DELETE', `/jobs/${jid}`, creator],
      ];
      for (const [method, path, token] of denied) {
        const res = await svc.request(path, { method: method as 'GET', token, ...(method === 'POST' ? { json: { Executable: '/bin/true' } } : {}) });
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
        assert.match(res.json.error_description, /compute\.(read|create|cancel)/);
      }
    });

    it('POST /jobs without a token → 401', async () => {
      const res = await svc.request('/jobs', { method: 'POST', json: { Executable: '/bin/true' } });
      assert.equal(res.status, 401);
      assert.equal(res.json.error, 'invalid_token');
    });

    const file = (filename: string, value: string | Buffer = 'data') => ({ name: 'file', filename, value });
    const manifest = (m: unknown = { Executable: '/bin/true' }) => ({ name: 'manifest', value: typeof m === 'string' ? m : JSON.stringify(m) });
    const multipartCases: [string, Parameters<typeof postMultipart>[2], number, string, RegExp][] = [
      ['no manifest part', [file('a.txt')], 400, 'invalid_request', /no 'manifest' or 'jdl' part/],
      ['an unparsable manifest', [manifest('{nope'), file('a.txt')], 400, 'invalid_request', /not valid JSON/],
      ['a manifest without Executable', [manifest({ JobName: 'x' }), file('a.txt')], 400, 'invalid_request', /Executable is required/],
      ['a file name with a slash', [manifest(), file('../evil.sh')], 400, 'invalid_request', /path separator/],
      ['a file name with ..', [manifest(), file('..')], 400, 'invalid_request', /'\.\.'/],
      ['a file name with a control character', [manifest(), file('bad\u0001name')], 400, 'invalid_request', /control character/],
      ['an empty file name', [manifest(), file('')], 400, 'invalid_request', /is empty|file name/],
      ['a duplicate file name', [manifest(), file('a.txt'), file('a.txt')], 400, 'invalid_request', /given twice/],
      ['a file over the per-file limit', [manifest(), file('big.bin', Buffer.alloc(1001))], 413, 'payload_too_large', /file 'big\.bin' is larger than 1000 bytes, the limit set by jobs\.sandbox\.maxFileSize/],
      ['files over the sandbox limit', [manifest(), file('a.bin', Buffer.alloc(800)), file('b.bin', Buffer.alloc(800))], 413, 'payload_too_large', /input sandbox \(its files together\) is larger than 1500 bytes \(1\.46 KiB\), the limit set by jobs\.sandbox\.maxSandboxSize/],
      ['a stray form field', [manifest(), { name: 'other', value: 'x' }], 400, 'invalid_request', /unexpected form field 'other'/],
    ];
    for (const [name, parts, status, error, message] of multipartCases) {
      it(`multipart POST /jobs with ${name} → ${status}`, async () => {
        const jobsBefore = await jobCount(svc);
        const sandboxesBefore = storedSandboxes(svc);
        const res = await postMultipart(svc, alice, parts);
        assert.equal(res.status, status, res.text);
        assert.equal(res.json.error, error);
        assert.match(res.json.error_description, message);
        assert.equal(await jobCount(svc), jobsBefore, 'no job was stored');
        assert.equal(storedSandboxes(svc), sandboxesBefore, 'no sandbox was stored');
      });
    }

    for (const [what, type, body] of [
      ['a truncated multipart body', 'multipart/form-data; boundary=xyz', '--xyz\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n{"Executable":"/bin/true"}\r\n'],
      ['a multipart body without a boundary', 'multipart/form-data', 'x'],
      ['a multipart body that is not multipart', 'multipart/form-data; boundary=xyz', 'garbage'],
    ] as const) {
      it(`multipart POST /jobs with ${what} → 400`, async () => {
        const before = await jobCount(svc);
        const res = await svc.request('/jobs', { method: 'POST', token: alice, body, headers: { 'content-type': type } });
        assert.equal(res.status, 400, res.text);
        assert.match(res.json.error_description, /multipart body is malformed/);
        assert.equal(await jobCount(svc), before);
      });
    }

    it('multipart with two manifests and one file: both jobs share the listed input sandbox', async () => {
      const res = await postMultipart(svc, alice, [manifest({ Executable: 'a.sh', JobName: 'one' }), manifest({ Executable: 'a.sh', JobName: 'two' }), file('a.sh', '#!/bin/sh\n')]);
      assert.equal(res.status, 201, res.text);
      assert.equal(res.json.jids.length, 2);
      for (const jid of res.json.jids) {
        const m = await svc.request(`/jobs/${jid}/manifest`, { token: alice });
        assert.deepEqual(m.json.InputSandbox, ['a.sh']);
      }
    });

    const listCases: [string, RegExp][] = [
      ['/jobs?Colour=red', /'Colour' is not a job attribute/],
      ['/jobs?maxJobs=abc', /maxJobs: 'abc' is not an integer/],
      ['/jobs?maxJobs=1.5', /maxJobs/],
      ['/jobs?maxJobs=0', /maxJobs: must be from 1 to 1000/],
      ['/jobs?maxJobs=1001', /maxJobs: must be from 1 to 1000/],
      ['/jobs?startJob=-1', /startJob/],
      ['/jobs?startJob=x', /startJob: 'x' is not an integer/],
      ['/jobs?allOwners=yes', /allOwners: 'yes' is not a boolean/],
      ['/jobs?allOwners=true&allOwners=false', /allOwners is given more than once/],
      ['/jobs?JobID=abc', /JobID: 'abc' is not an integer/],
      ['/jobs/abc', /jid: 'abc' is not a job id/],
      ['/jobs/1.5', /jid/],
      ['/jobs/0/manifest', /jid/],
      ['/jobs/-3/outputsandbox', /jid/],
    ];
    for (const [path, message] of listCases) {
      it(`GET ${path} → 400`, async () => {
        const res = await svc.request(path, { token: alice });
        assert.equal(res.status, 400, res.text);
        assert.equal(res.json.error, 'invalid_request');
        assert.match(res.json.error_description, message);
      });
    }

    it('DELETE /jobs/abc → 400', async () => {
      const res = await svc.request('/jobs/abc', { method: 'DELETE', token: alice });
      assert.equal(res.status, 400);
    });

    it('sandbox downloads: 404 without an input sandbox, 409 while the output is not ready', async () => {
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true' } });
      const jid = res.json.jids[0];
      const input = await svc.request(`/jobs/${jid}/inputsandbox`, { token: alice });
      assert.equal(input.status, 404);
      assert.equal(input.json.error, 'not_found');
      const output = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal(output.status, 409);
      assert.match(output.json.error_description, /not ready: the job is Waiting/);
      // Killed before it ran: final, and there is no output at all.
      assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
      const none = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal(none.status, 404);
    });
  });
}
