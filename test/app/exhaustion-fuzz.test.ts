/**
 * The resource-exhaustion mode of `npm run fuzz`: each attack an authenticated user could make
 * on the newer surfaces runs against a real `dirigo serve` process while another connection asks /healthz
 * every 25 ms. It prints, per attack, the slowest /healthz answer and the server's resident memory before
 * and after, and fails when /healthz waited more than a second or the server stopped answering.
 * A measurement, so it runs only under `npm run fuzz` (DIRIGO_FUZZ_EXHAUSTION=1), never in `npm test`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import { flowAToken, prepareServe, startServe, stopServe, userAgent, type ServeProcess, type ServeSetup } from '../helpers/serve-process.ts';

const ENABLED = process.env.DIRIGO_FUZZ_EXHAUSTION === '1';
/** The goal: no attack makes /healthz wait longer than this. */
const HEALTHZ_BUDGET_MS = 1000;

interface Measure {
  attack: string;
  slowestMs: number;
  healthChecks: number;
  rssBeforeMb: number;
  rssAfterMb: number;
}

/** The process's resident memory; NaN once it has gone. */
function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`resource exhaustion: /healthz while each attack runs (${dialect})`, { skip: ENABLED ? skip : 'runs under npm run fuzz (DIRIGO_FUZZ_EXHAUSTION=1)' }, () => {
    let setup: ServeSetup;
    let serve: ServeProcess;
    let alice: Agent;
    let health: Agent;
    const tokens: Record<string, string> = {};
    const measures: Measure[] = [];

    before(async () => {
      setup = await prepareServe(dialect, { sites: [{ name: 'Pool', type: 'agents', heartbeatIntervalMs: 60000 }] });
      serve = await startServe(setup);
      alice = userAgent(setup.pki, 'alice', 64);
      health = new Agent({ connect: { ca: setup.pki.ca.certPem }, connections: 1 });
      await fetchTokens();
    });

    /** Tokens name the server's address as their issuer: fetched again whenever the server starts. */
    async function fetchTokens(): Promise<void> {
      tokens.alice = await flowAToken(serve.url, alice);
      for (const [user, group] of [['bob', 'dirigo_user'], ['admin', 'dirigo_admin'], ['pilot', 'dirigo_pilot']] as const) {
        const agent = userAgent(setup.pki, user);
        tokens[user] = await flowAToken(serve.url, agent, group);
        await agent.close();
      }
    }
    after(async (t) => {
      for (const m of measures) {
        t.diagnostic(`${m.attack.padEnd(44)} slowest /healthz ${String(m.slowestMs).padStart(6)} ms over ${m.healthChecks} checks; RSS ${m.rssBeforeMb} → ${m.rssAfterMb} MB`);
      }
      await Promise.all([alice?.close(), health?.close()]);
      if (serve) await stopServe(serve);
      await setup?.dropSchema?.();
    });

    async function call(method: string, path: string, token: string, body?: unknown, type = 'application/json'): Promise<{ status: number; text: string }> {
      const res = await request(`${serve.url}${path}`, {
        method: method as 'GET',
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': type }) },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        dispatcher: alice,
      });
      return { status: res.statusCode, text: await res.body.text() };
    }

    /** Runs the attack while /healthz is asked every 25 ms; records the slowest answer. */
    async function measure(attack: string, run: () => Promise<void>): Promise<void> {
      // An attack that killed the server fails alone: the next one gets a server again (same data).
      if (serve.child.exitCode !== null || serve.child.signalCode !== null) {
        serve = await startServe(setup);
        await fetchTokens();
      }
      const pid = serve.child.pid!;
      const rssBeforeMb = rssMb(pid);
      let slowestMs = 0;
      let healthChecks = 0;
      let healthError: string | undefined;
      let stop = false;
      const poller = (async () => {
        while (!stop && healthError === undefined) {
          const start = performance.now();
          try {
            const res = await request(`${serve.url}/healthz`, { dispatcher: health, headersTimeout: 30000, bodyTimeout: 30000 });
            await res.body.dump();
            if (res.statusCode !== 200) healthError = `/healthz answered ${res.statusCode}`;
          } catch (err) {
            healthError = `/healthz failed: ${(err as Error).message}`;
          }
          slowestMs = Math.max(slowestMs, Math.round(performance.now() - start));
          healthChecks++;
          await new Promise((r) => setTimeout(r, 25));
        }
      })();
      let attackError: unknown;
      try {
        await run();
        // A blocked loop may still be busy after the last answer: give the poller one more round.
        await new Promise((r) => setTimeout(r, 200));
      } catch (err) {
        attackError = err;
      } finally {
        stop = true;
        await poller;
      }
      const exited = serve.child.exitCode !== null || serve.child.signalCode !== null;
      measures.push({ attack, slowestMs, healthChecks, rssBeforeMb, rssAfterMb: exited ? NaN : rssMb(pid) });
      assert.ok(!exited, `${attack}: the server exited (${serve.child.exitCode ?? serve.child.signalCode})`);
      assert.equal(healthError, undefined, `${attack}: ${healthError}`);
      if (attackError) throw attackError;
      assert.ok(slowestMs <= HEALTHZ_BUDGET_MS, `${attack}: /healthz waited ${slowestMs} ms (budget ${HEALTHZ_BUDGET_MS} ms)`);
    }

    it('a 1 MiB parametric manifest with 10,000 parameters and no Executable', () =>
      measure('parametric: 10,000 × 1 MiB template', async () => {
        for (let i = 0; i < 3; i++) {
          const res = await call('POST', '/jobs', tokens.alice!, { Parameters: 10000, JobName: `%n${'x'.repeat(1024 * 1024 - 64)}` });
          assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${res.text.slice(0, 200)}`);
        }
      }));

    it('an invalid manifest of 27 kB', () =>
      measure('invalid manifest, 27 kB', async () => {
        const manifest = Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`Key${i}`, { nested: [i, 'x'.repeat(8)] }]));
        for (let i = 0; i < 5; i++) await call('POST', '/jobs', tokens.alice!, { ...manifest, Parameters: 10000 });
      }));

    it('search bodies with 50,000 repeated parameters and a 1 MB body', () =>
      measure('search: repeated parameters up to 1 MB', async () => {
        for (const n of [50000, 110000]) {
          const res = await call('POST', '/jobs/search', tokens.alice!, { parameters: Array.from({ length: n }, () => 'Status') });
          assert.ok(res.status < 500, `${res.status} ${res.text.slice(0, 200)}`);
        }
      }));

    it('JSON nested 5,000 deep on every JSON body route', () =>
      measure('deep JSON (5,000)', async () => {
        const deep = '['.repeat(5000) + ']'.repeat(5000);
        for (const path of ['/jobs', '/jobs/search', '/jobs/kill', '/oauth2/register']) {
          const res = await call('POST', path, tokens.alice!, `{"a":${deep}}`);
          assert.ok(res.status < 500, `${path}: ${res.status} ${res.text.slice(0, 200)}`);
        }
      }));

    it('2,000 event streams from one user, then 300 submissions', () =>
      measure('events: 2,000 streams + 300 submissions', async () => {
        // Streams never end: they get connections of their own, so that the submissions still find one.
        const many = new Agent({ connect: { ca: setup.pki.ca.certPem }, connections: 2000 });
        // A hundred at a time: 2,000 TLS handshakes at once would measure the handshakes (a connection
        // flood, which a per-address connection limit in front of the service answers), not the streams.
        const streams: { statusCode: number; body: { on(event: 'error', f: () => void): { destroy(): void } } | null }[] = [];
        for (let i = 0; i < 2000; i += 100) {
          streams.push(
            ...(await Promise.all(
              Array.from({ length: 100 }, () =>
                request(`${serve.url}/jobs/events`, { headers: { authorization: `Bearer ${tokens.alice}` }, dispatcher: many }).catch(() => ({ statusCode: 0, body: null })),
              ),
            )),
          );
        }
        const open = streams.filter((s) => s.statusCode === 200).length;
        try {
          for (let i = 0; i < 300; i += 10) {
            await Promise.all(Array.from({ length: 10 }, (_, k) => call('POST', '/jobs', tokens.alice!, { Executable: '/bin/true', JobName: `flood-${i + k}` })));
          }
        } finally {
          for (const s of streams) s.body?.on('error', () => {}).destroy();
          await many.destroy();
        }
        assert.ok(open < 2000, `all 2,000 streams were accepted (${open} open)`);
      }));

    it('replays from Last-Event-ID 0.0 by a user with no jobs', () =>
      measure('events: replay from 0.0, user with no jobs', async () => {
        for (let i = 0; i < 10; i++) {
          const res = await request(`${serve.url}/jobs/events`, { headers: { authorization: `Bearer ${tokens.bob}`, 'last-event-id': '0.0' }, dispatcher: alice });
          res.body.on('error', () => {});
          if (res.statusCode === 200) {
            // Read until the `ready` event: the replay is done by then.
            for await (const chunk of res.body) if (String(chunk).includes('event: ready')) break;
          }
          res.body.destroy();
        }
      }));

    it('a summary over four attributes with a distinct value per job', () =>
      measure('summary: four uncounted attributes', async () => {
        for (let i = 0; i < 5; i++) {
          const res = await call('POST', '/jobs', tokens.alice!, Array.from({ length: 1000 }, (_, k) => ({ Executable: '/bin/true', JobName: `s${i}-${k}`, JobGroup: `g${i}-${k}` })));
          assert.equal(res.status, 201, res.text.slice(0, 200));
        }
        const res = await call('GET', '/jobs/summary?groupBy=JobName&groupBy=JobGroup&groupBy=MinorStatus&groupBy=ApplicationStatus&allOwners=true', tokens.admin!);
        assert.ok(res.status < 500, `${res.status} ${res.text.slice(0, 200)}`);
        assert.ok(res.text.length < 4 * 1024 * 1024, `the summary answered ${res.text.length} bytes`);
      }));

    it('reports without end from one job token', () =>
      measure('reports: 200 × 100 parameters of 4 kB', async () => {
        const matched = await call('POST', '/agents/match', tokens.pilot!, { agentId: 'exhaustion', site: 'Pool', slots: 1 });
        assert.equal(matched.status, 200, matched.text);
        const job = (JSON.parse(matched.text) as { jobs: { JobID: number; JobToken: string }[] }).jobs[0]!;
        let refused = 0;
        for (let i = 0; i < 200; i++) {
          const Parameters = Object.fromEntries(Array.from({ length: 100 }, (_, k) => [`p${i}_${k}`, 'v'.repeat(4096)]));
          const res = await call('POST', `/jobs/${job.JobID}/report`, job.JobToken, { Parameters });
          assert.ok(res.status < 500, `${res.status} ${res.text.slice(0, 200)}`);
          if (res.status >= 400) refused++;
        }
        assert.ok(refused > 0, 'every one of 200 reports of 100 parameters was stored');
      }));
  });
}
