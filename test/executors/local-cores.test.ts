/**
 * A local site's cores (docs/matching.md): a site of 4 cores runs four 1-core jobs at once, or one 4-core
 * job alone, and every payload is told its processors in DIRIGO_NUMBER_OF_PROCESSORS. Real payloads, both
 * databases.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';

/** A payload that records its processors, says it started, and waits (at most 30 s) until `until` holds. */
function payload(dir: string, until: string): { Executable: string; Arguments: string } {
  const script = `echo "$DIRIGO_NUMBER_OF_PROCESSORS" > ${dir}/procs.$DIRIGO_JOB_ID; touch ${dir}/started.$DIRIGO_JOB_ID; i=0; until ${until}; do i=$((i+1)); [ $i -lt 300 ] || exit 7; sleep 0.1; done`;
  return { Executable: '/bin/sh', Arguments: `-c '${script}'` };
}

for (const { dialect, skip } of await dialects()) {
  describe(`a local site's cores (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;

    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { pollIntervalMs: 100 }, sites: [{ name: 'Local', type: 'local', slots: 4, cores: 4, memoryMb: 4000, isolation: 'none' }] });
      alice = await svc.token('alice');
    });
    after(async () => svc?.close());

    test('four 1-core jobs run at once, each told 1 processor', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-cores-'));
      // Each waits until all four have started: only four at once get there.
      const manifest = payload(dir, `[ $(ls ${dir} | grep -c ^started) -ge 4 ]`);
      const jids = [];
      for (let i = 0; i < 4; i++) jids.push(await submit(svc, alice, { ...manifest, Sites: ['Local'] }));
      for (const jid of jids) {
        const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 40000);
        assert.equal(job.Status, 'Done', String(job.MinorStatus));
        assert.equal(readFileSync(join(dir, `procs.${jid}`), 'utf8').trim(), '1');
      }
    });

    test('a 4-core job runs alone: a 1-core job waits until it ends; the payload is told 4', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-cores-'));
      const release = join(dir, 'release');
      const big = await submit(svc, alice, { ...payload(dir, `[ -e ${release} ]`), NumberOfProcessors: 4, Sites: ['Local'] });
      await waitForStatus(svc, alice, big, ['Running'], 30000);
      const small = await submit(svc, alice, { ...payload(dir, 'true'), Sites: ['Local'] });
      // Four slots are free but no core is: the small job is not even matched.
      await new Promise((r) => setTimeout(r, 1500));
      const waiting = await svc.request(`/jobs/${small}`, { token: alice });
      assert.equal(waiting.json.Status, 'Waiting', String(waiting.json.MinorStatus));
      assert.equal(existsSync(join(dir, `started.${small}`)), false);
      writeFileSync(release, '');
      for (const jid of [big, small]) assert.equal((await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 40000)).Status, 'Done');
      assert.equal(readFileSync(join(dir, `procs.${big}`), 'utf8').trim(), '4');
    });

    test('a job of a processor range gets every free core; one asking for more than the site has never runs here', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-cores-'));
      const range = await submit(svc, alice, { ...payload(dir, 'true'), MinNumberOfProcessors: 2, MaxNumberOfProcessors: 8, Sites: ['Local'] });
      const tooBig = await submit(svc, alice, { ...payload(dir, 'true'), NumberOfProcessors: 5, Sites: ['Local'] });
      const tooMuchMemory = await submit(svc, alice, { ...payload(dir, 'true'), MaxRAM: 5000, Sites: ['Local'] });
      assert.equal((await waitForStatus(svc, alice, range, ['Done', 'Failed', 'Killed'], 30000)).Status, 'Done');
      assert.equal(readFileSync(join(dir, `procs.${range}`), 'utf8').trim(), '4');
      await new Promise((r) => setTimeout(r, 1000));
      for (const jid of [tooBig, tooMuchMemory]) assert.equal((await svc.request(`/jobs/${jid}`, { token: alice })).json.Status, 'Waiting');
    });
  });
}
