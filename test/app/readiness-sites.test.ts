/**
 * Issue 31, point 12: `/readyz` lists every configured site with its state. A local site is ready; a
 * Slurm site is unchecked until a command has run, then not ready with the command's error once its
 * commands fail (and the instance with it: 503); an agents site is idle until an agent asks for jobs,
 * which never fails readiness; an API-only instance lists the sites other instances run.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { submit } from '../jobs/helpers.ts';

/** A Slurm whose controller is down: every command fails as real ones do then. */
function unreachableSlurm(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-unreachable-slurm-'));
  for (const command of ['sbatch', 'squeue', 'scancel']) {
    writeFileSync(join(dir, command), `#!/bin/sh\necho "${command}: error: Unable to contact slurm controller (connect failure)" >&2\nexit 1\n`);
    chmodSync(join(dir, command), 0o755);
  }
  return dir;
}

const SITES = [
  { name: 'Local', type: 'local', slots: 1, isolation: 'none' },
  { name: 'Cluster', type: 'slurm', binDir: unreachableSlurm(), retryDelayMs: 50 },
  { name: 'Pool', type: 'agents', heartbeatIntervalMs: 1000 },
];

for (const { dialect, skip } of await dialects()) {
  describe(`/readyz reports each site (${dialect})`, { skip }, () => {
    let svc: TestService;
    let apiOnly: TestService;
    before(async () => {
      svc = await startTestService({ dialect, config: { jobs: { scheduler: { pollIntervalMs: 50, leaseMs: 5000 }, sites: SITES } } });
      apiOnly = await startTestService({ dialect, config: { jobs: { scheduler: { enabled: false }, sites: SITES } } });
    });
    after(async () => {
      await svc?.close();
      await apiOnly?.close();
    });

    it('lists every site: local ready, Slurm unchecked before any command, agents idle; the instance is ready', async () => {
      const ready = await svc.request('/readyz');
      assert.equal(ready.status, 200, ready.text);
      assert.deepEqual(ready.json.sites.Local, { type: 'local', state: 'ready' });
      assert.equal(ready.json.sites.Cluster.type, 'slurm');
      assert.equal(ready.json.sites.Cluster.state, 'unchecked');
      assert.match(ready.json.sites.Cluster.reason, /no Slurm command has run/);
      assert.deepEqual(ready.json.sites.Pool, { type: 'agents', state: 'idle', agents: 0, reason: ready.json.sites.Pool.reason });
      assert.match(ready.json.sites.Pool.reason, /no agent has asked for jobs .* in the last 3 s/);
      assert.equal(ready.json.checks.batchSystem.ready, true);
    });

    it('an agents site is ready once an agent asks for jobs, and says how many are connected', async () => {
      const pilot = await svc.token('pilot', 'dirigo_pilot');
      const match = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'r1', site: 'Pool', slots: 1 } });
      assert.equal(match.status, 200, match.text);
      const ready = await svc.request('/readyz');
      assert.deepEqual(ready.json.sites.Pool, { type: 'agents', state: 'ready', agents: 1 });
    });

    it('a Slurm site whose commands fail is not ready, naming the error, and so is the instance (503)', async () => {
      const alice = await svc.token('alice');
      await submit(svc, alice, { Executable: '/bin/true', Sites: ['Cluster'] });
      let ready = await svc.request('/readyz');
      for (let i = 0; i < 200 && ready.status === 200; i++) {
        await new Promise((r) => setTimeout(r, 50));
        ready = await svc.request('/readyz');
      }
      assert.equal(ready.status, 503, ready.text);
      assert.ok(Number(ready.headers['retry-after']) >= 1);
      assert.equal(ready.json.error, 'service_unavailable');
      assert.equal(ready.json.sites.Cluster.state, 'not_ready');
      assert.match(ready.json.sites.Cluster.reason, /^sbatch: Unable to contact slurm controller/);
      assert.equal(ready.json.checks.batchSystem.ready, false);
      assert.match(ready.json.error_description, /batchSystem \(site Cluster: sbatch: Unable to contact slurm controller/);
      // The other sites are as they were: only the broken one is named.
      assert.deepEqual(ready.json.sites.Local, { type: 'local', state: 'ready' });
    });

    it('an API-only instance lists the sites other instances run, and is ready', async () => {
      const ready = await apiOnly.request('/readyz');
      assert.equal(ready.status, 200, ready.text);
      for (const name of ['Local', 'Cluster']) {
        assert.equal(ready.json.sites[name].state, 'elsewhere', name);
        assert.match(ready.json.sites[name].reason, /jobs\.scheduler\.enabled is false/);
      }
      assert.equal(ready.json.sites.Pool.type, 'agents');
    });
  });
}
