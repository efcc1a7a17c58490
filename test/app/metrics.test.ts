/**
 * Each operator metric is caused by a real action and read back from `/metrics`; the whole exposition is
 * checked by Prometheus's own `promtool check metrics`, and the alert rules under deploy/ by
 * `promtool check rules` (Debian's prometheus package).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { Browser, oauthConfig, pkcePair } from '../helpers/oauth-kit.ts';
import { startTestService } from '../helpers/service.ts';
import { FINAL, submit } from '../jobs/helpers.ts';

const PROMTOOL = '/usr/bin/promtool';
const havePromtoolOrCi = spawnSync(PROMTOOL, ['--version']).status === 0 || process.env.CI === 'true';

/** The value of one sample, `name{labels}` matched on the given labels; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const body = /\{([^}]*)\}/.exec(line)?.[1] ?? '';
    if (Object.entries(labels).every(([k, v]) => body.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

function promtool(args: string[], input?: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(PROMTOOL, args, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }));
    if (input !== undefined) child.stdin!.end(input);
  });
}

/** A Slurm whose controller is down: every command fails as real ones do then. */
function brokenSlurm(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-broken-slurm-'));
  for (const command of ['sbatch', 'squeue', 'scancel']) {
    writeFileSync(join(dir, command), `#!/bin/sh\necho "${command}: error: Unable to contact slurm controller (connect failure)" >&2\nexit 1\n`);
    chmodSync(join(dir, command), 0o755);
  }
  return dir;
}

for (const { dialect, skip } of await dialects()) {
  describe(`operator metrics (${dialect})`, { skip }, () => {
    let svc: TestService;
    let metrics: () => Promise<string>;
    before(async () => {
      svc = await startTestService({
        dialect,
        config: await oauthConfig({
          jobs: {
            scheduler: { pollIntervalMs: 50, leaseMs: 5000 },
            sites: [
              { name: 'Local', type: 'local', slots: 2 },
              { name: 'Down', type: 'slurm', binDir: brokenSlurm(), retryDelayMs: 50 },
              { name: 'Pool', type: 'agents', heartbeatIntervalMs: 1000 },
            ],
          },
        }),
      });
      metrics = async () => {
        const res = await svc.request('/metrics');
        assert.equal(res.status, 200);
        return res.text;
      };
    });
    after(() => svc?.close());

    it('counts submissions and transitions, and reads jobs per status and site from the database', async () => {
      const alice = await svc.token('alice');
      const before = await metrics();
      const jid = await submit(svc, alice, { Executable: '/bin/echo', Arguments: 'hi', Sites: ['Local'] });
      for (let i = 0; i < 200; i++) {
        if (FINAL.includes((await svc.request(`/jobs/${jid}`, { token: alice })).json.Status)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const text = await metrics();
      assert.equal(sample(text, 'dirigo_job_submissions_total')! - (sample(before, 'dirigo_job_submissions_total') ?? 0), 1);
      assert.ok(sample(text, 'dirigo_job_status_transitions_total', { to: 'Done' })! >= 1);
      assert.equal(sample(text, 'dirigo_jobs', { status: 'Done', site: 'Local' }), 1);
      assert.ok(sample(text, 'dirigo_sandbox_stored_bytes_total')! > 0, 'the output sandbox was stored');
      // A job for the broken site waits: it is queue depth.
      await submit(svc, alice, { Executable: '/bin/true', Sites: ['Down'] });
      const queued = await metrics();
      assert.ok(sample(queued, 'dirigo_scheduler_queue_depth_jobs')! >= 0);
      assert.ok(sample(queued, 'dirigo_scheduler_cycle_duration_seconds_count', { loop: 'Local' })! > 0);
      assert.ok(sample(queued, 'dirigo_scheduler_cycle_duration_seconds_count', { loop: '(leases)' })! > 0);
      assert.equal(sample(queued, 'dirigo_site_slots', { site: 'Local', state: 'free' }), 2);
      assert.equal(sample(queued, 'dirigo_site_slots', { site: 'Local', state: 'used' }), 0);
    });

    it('times batch-system commands and counts their failures; /readyz names the broken batch system', async () => {
      const alice = await svc.token('alice');
      await submit(svc, alice, { Executable: '/bin/true', Sites: ['Down'] });
      let ready = await svc.request('/readyz');
      for (let i = 0; i < 100 && ready.status === 200; i++) {
        await new Promise((r) => setTimeout(r, 50));
        ready = await svc.request('/readyz');
      }
      const text = await metrics();
      assert.ok(sample(text, 'dirigo_batch_command_failures_total', { command: 'sbatch' })! > 0);
      assert.ok(sample(text, 'dirigo_batch_command_duration_seconds_count', { command: 'sbatch' })! > 0);
      assert.equal(ready.status, 503);
      assert.equal(ready.json.error, 'service_unavailable');
      assert.equal(ready.json.checks.database.ready, true);
      assert.equal(ready.json.checks.keyStore.ready, true);
      assert.equal(ready.json.checks.batchSystem.ready, false);
      assert.match(ready.json.checks.batchSystem.reason, /site Down: sbatch: Unable to contact slurm controller/);
      assert.match(ready.json.error_description, /batchSystem/);
    });

    it('reports connected agents and how long ago each agents site was heard from', async () => {
      const pilot = await svc.token('pilot', 'dirigo_pilot');
      const empty = await metrics();
      assert.equal(sample(empty, 'dirigo_agents_connected', { site: 'Pool' }), 0);
      assert.equal(sample(empty, 'dirigo_agent_last_seen_age_seconds', { site: 'Pool' }), undefined);
      for (const agentId of ['a1', 'a2']) {
        assert.equal((await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId, site: 'Pool', slots: 1 } })).status, 200);
      }
      assert.equal((await svc.request('/agents/heartbeat', { method: 'POST', token: pilot, json: { agentId: 'a1', jobs: [] } })).status, 200);
      await new Promise((r) => setTimeout(r, 1000));
      const text = await metrics();
      assert.equal(sample(text, 'dirigo_agents_connected', { site: 'Pool' }), 2);
      const age = sample(text, 'dirigo_agent_last_seen_age_seconds', { site: 'Pool' })!;
      assert.ok(age >= 1 && age < 60, String(age));
    });

    it('counts tokens by grant, refusals by OAuth error code, failed sign-ins and lock-outs', async () => {
      const before = await metrics();
      await svc.token('alice');
      assert.equal((await svc.request('/oauth2/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=password' })).status, 400);
      const b = new Browser(svc);
      try {
        const q = new URLSearchParams({ response_type: 'code', client_id: 'test-public', redirect_uri: 'http://127.0.0.1:5009/callback', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
        const login = await b.follow(`/oauth2/auth?${q}`);
        for (let i = 0; i < 3; i++) await b.login(login, 'carol', 'wrong');
        assert.equal((await b.login(login, 'carol', 'wrong')).status, 429);
      } finally {
        await b.close();
      }
      const text = await metrics();
      const delta = (name: string, labels: Record<string, string>) => (sample(text, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
      assert.equal(delta('dirigo_oauth_tokens_issued_total', { grant: 'client_credentials' }), 1);
      assert.equal(delta('dirigo_oauth_token_refusals_total', { error: 'unsupported_grant_type' }), 1);
      assert.equal(delta('dirigo_login_failures_total', { form: 'password' }), 3);
      assert.equal(delta('dirigo_login_lockouts_total', { form: 'password' }), 1);
    });

    it('times each request by method, route and status, in cumulative buckets', async () => {
      const before = await metrics();
      const at = (text: string, suffix: string, more: Record<string, string> = {}) =>
        sample(text, `dirigo_http_request_duration_seconds_${suffix}`, { method: 'GET', route: '/healthz', status: '200', ...more }) ?? 0;
      for (let i = 0; i < 3; i++) assert.equal((await svc.request('/healthz')).status, 200);
      assert.equal((await svc.request('/jobs/not-a-number')).status, 401);
      const text = await metrics();
      assert.equal(at(text, 'count') - at(before, 'count'), 3);
      assert.equal(at(text, 'bucket', { le: '+Inf' }), at(text, 'count'));
      assert.ok(at(text, 'sum') > at(before, 'sum'));
      // Buckets count everything at or below their bound: they never fall as the bound grows.
      const buckets = ['0.001', '0.01', '0.1', '1', '10'].map((le) => at(text, 'bucket', { le }));
      assert.deepEqual([...buckets].sort((a, b) => a - b), buckets);
      assert.ok(sample(text, 'dirigo_http_request_duration_seconds_count', { method: 'GET', route: '/jobs/:jid', status: '401' })! >= 1);
    });

    it('times database queries, and shows the PostgreSQL pool', async () => {
      const text = await metrics();
      assert.ok(sample(text, 'dirigo_db_query_duration_seconds_count', { outcome: 'ok' })! > 0);
      if (dialect === 'postgres') {
        assert.equal(sample(text, 'dirigo_db_pool_max_connections'), 5);
        assert.ok(sample(text, 'dirigo_db_pool_connections', { state: 'idle' })! >= 0);
        assert.equal(sample(text, 'dirigo_db_pool_waiting_requests'), 0);
      }
    });

    it('passes promtool check metrics', { skip: !havePromtoolOrCi && 'promtool is not installed (Debian prometheus)' }, async () => {
      const { code, out } = await promtool(['check', 'metrics'], await metrics());
      assert.equal(code, 0, out);
    });
  });
}

describe('deployment files', () => {
  it('the alert rules pass promtool check rules', { skip: !havePromtoolOrCi && 'promtool is not installed (Debian prometheus)' }, async () => {
    const { code, out } = await promtool(['check', 'rules', 'deploy/prometheus/dirigo-alerts.yml']);
    assert.equal(code, 0, out);
    assert.match(out, /SUCCESS: \d+ rules found/);
  });

  it('the alert rules test file passes promtool test rules', { skip: !havePromtoolOrCi && 'promtool is not installed (Debian prometheus)' }, async () => {
    const { code, out } = await promtool(['test', 'rules', 'deploy/prometheus/dirigo-alerts.test.yml']);
    assert.equal(code, 0, out);
  });
});
