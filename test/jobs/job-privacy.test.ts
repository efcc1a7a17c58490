/**
 * Another user's job is answered as if it did not exist: bob's requests on alice's job
 * get exactly the answer a job id that was never used gets (status, error code, words; only the id
 * differs), so that neither the job nor its owner shows through. A JobMonitor, who sees the job but may
 * not act on it, is refused without the owner's name.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit } from './helpers.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`another user's job is answered as no job (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let aliceJob: number;
    let unused: number;
    before(async () => {
      // No scheduler: the job stays Waiting, and nothing else changes it between the two requests.
      svc = await startJobsService(dialect, { scheduler: { enabled: false } });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
      aliceJob = await submit(svc, alice, { Executable: '/bin/true', JobName: 'alice-private', Arguments: 'secret' });
      unused = aliceJob + 1_000_000;
    });
    after(() => svc?.close());

    /** The answer with the id replaced: status, type, body (request_id dropped). */
    async function answer(token: string, method: 'GET' | 'POST' | 'DELETE', path: string, id: number, json?: unknown) {
      const res = await svc.request(path.replaceAll('{id}', String(id)), { method, token, ...(json !== undefined ? { json: JSON.parse(JSON.stringify(json).replaceAll('"{id}"', String(id))) } : {}) });
      let body = res.text;
      if (res.json && typeof res.json === 'object') {
        const { request_id: _ignored, ...rest } = res.json as Record<string, unknown>;
        body = JSON.stringify(rest);
      }
      return { status: res.status, type: String(res.headers['content-type']), body: body.replace(new RegExp(`\\b${id}\\b`, 'g'), '<id>') };
    }

    const requests: Array<[string, 'GET' | 'POST' | 'DELETE', string, unknown?]> = [
      ['show', 'GET', '/jobs/{id}'],
      ['manifest', 'GET', '/jobs/{id}/manifest'],
      ['input sandbox', 'GET', '/jobs/{id}/inputsandbox'],
      ['output sandbox', 'GET', '/jobs/{id}/outputsandbox'],
      ['peek', 'GET', '/jobs/{id}/peek'],
      ['kill', 'DELETE', '/jobs/{id}'],
      ['bulk kill', 'POST', '/jobs/kill', { jids: ['{id}'] }],
      ['reschedule', 'POST', '/jobs/reschedule', { jids: ['{id}'] }],
      ['delete', 'POST', '/jobs/delete', { jids: ['{id}'] }],
      ['report with a user token', 'POST', '/jobs/{id}/report', { ApplicationStatus: 'x' }],
      ['listed by JobID', 'GET', '/jobs?allOwners=true&JobID={id}'],
      ['searched by JobID', 'POST', '/jobs/search', { allOwners: true, search: [{ parameter: 'JobID', operator: 'eq', value: '{id}' }] }],
      ['counted by JobID', 'GET', '/jobs/summary?allOwners=true&groupBy=Status&JobID={id}'],
    ];

    it('bob gets for alice\'s job what he gets for an id never used', async () => {
      assert.deepEqual(await answer(bob, 'GET', '/jobs/{id}', aliceJob), { status: 404, type: 'application/json; charset=utf-8', body: '{"error":"not_found","error_description":"job <id> does not exist"}' });
      for (const [what, method, path, json] of requests) {
        const hers = await answer(bob, method, path, aliceJob, json);
        const none = await answer(bob, method, path, unused, json);
        assert.deepEqual(hers, none, what);
        assert.doesNotMatch(hers.body, /alice/, what);
      }
      // The job is untouched, and alice still sees it as it was.
      const job = await svc.request(`/jobs/${aliceJob}`, { token: alice });
      assert.equal(job.json.Status, 'Waiting');
    });

    it('a member of a JobSharing group sees no job of another group: as no job', async () => {
      const carolProd = await svc.token('carol', 'dirigo_prod');
      for (const [what, method, path, json] of requests) {
        assert.deepEqual(await answer(carolProd, method, path, aliceJob, json), await answer(carolProd, method, path, unused, json), what);
      }
    });

    it('a JobMonitor sees the job but may not act on it, and the refusal names no other user', async () => {
      const monitor = await svc.token('carol', 'dirigo_monitor');
      assert.equal((await svc.request(`/jobs/${aliceJob}`, { token: monitor })).status, 200);
      const kill = await svc.request(`/jobs/${aliceJob}`, { method: 'DELETE', token: monitor });
      assert.deepEqual([kill.status, kill.json.error], [403, 'insufficient_privileges']);
      assert.doesNotMatch(kill.json.error_description, /alice/);
      for (const action of ['kill', 'reschedule', 'delete']) {
        const [result] = (await svc.request(`/jobs/${action}`, { method: 'POST', token: monitor, json: { jids: [aliceJob] } })).json.results;
        assert.equal(result.error, 'insufficient_privileges', action);
        assert.doesNotMatch(result.error_description, /alice/, action);
      }
      assert.equal((await svc.request(`/jobs/${aliceJob}`, { token: alice })).json.Status, 'Waiting');
    });
  });
}
