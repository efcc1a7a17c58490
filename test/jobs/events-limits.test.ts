/**
 * GET /jobs/events under load and over time: open streams are limited per user (429) and per
 * instance (503) before a stream starts, and freed when it closes; a replay reads only the history of jobs
 * its caller may see, in SQL, through the owner index; a stream ends when its access token is revoked
 * (RFC 7009 revocation, or the grant revoked from the account) or expires.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { Agent, request } from 'undici';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';
import { historyQuery, parameterQuery } from '../../src/jobs/events.ts';
import { authorize, Browser, oauthConfig, pkcePair, postForm } from '../helpers/oauth-kit.ts';
import { submit } from './helpers.ts';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One GET /jobs/events: its status at once, then, for a stream, its events as they come. */
interface Stream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON body of a refusal. */
  json: { error?: string; error_description?: string } | undefined;
  events: EventSourceMessage[];
  /** Resolves when the service ends the stream. */
  ended: Promise<void>;
  waitFor(match: (e: EventSourceMessage) => boolean, timeoutMs?: number): Promise<EventSourceMessage>;
  close(): void;
}

async function openStream(svc: TestService, agent: Agent, token: string, headers: Record<string, string> = {}, query = ''): Promise<Stream> {
  const res = await request(`${svc.url}/jobs/events${query}`, { headers: { authorization: `Bearer ${token}`, ...headers }, dispatcher: agent });
  const events: EventSourceMessage[] = [];
  const waiters = new Set<() => void>();
  if (res.statusCode !== 200) {
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, json: JSON.parse(text), events, ended: Promise.resolve(), waitFor: () => Promise.reject(new Error(`refused: ${text}`)), close: () => {} };
  }
  const parser = createParser({
    onEvent: (e) => {
      events.push(e);
      for (const w of waiters) w();
    },
  });
  const decoder = new TextDecoder();
  res.body.on('data', (chunk: Buffer) => parser.feed(decoder.decode(chunk, { stream: true })));
  const ended = new Promise<void>((resolve) => {
    res.body.on('end', resolve);
    res.body.on('error', () => resolve());
    res.body.on('close', resolve);
  });
  return {
    status: 200,
    headers: res.headers,
    json: undefined,
    events,
    ended,
    waitFor(match, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (!found) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no such event within ${timeoutMs} ms; received: ${JSON.stringify(events.slice(-10))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => res.body.destroy(),
  };
}

/** A stream opened once the instance has room again (the previous test's streams may still be closing). */
async function openWhenFree(svc: TestService, agent: Agent, token: string, headers: Record<string, string> = {}, query = ''): Promise<Stream> {
  for (let i = 0; ; i++) {
    const s = await openStream(svc, agent, token, headers, query);
    if (s.status !== 503 || i >= 50) return s;
    await wait(100);
  }
}

/** Whether `promise` settles within `ms` (a generous bound, not a timing). */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  const result = await Promise.race([promise.then(() => true), late]);
  clearTimeout(timer);
  return result;
}

for (const { dialect, skip } of await dialects()) {
  describe(`job event streams: limits, replay scope, token ends (${dialect})`, { skip }, () => {
    let svc: TestService;
    let agent: Agent;
    let browser: Browser;
    let alice: string;
    let bob: string;
    before(async () => {
      svc = await startTestService({
        dialect,
        config: {
          ...(await oauthConfig()),
          jobs: {
            scheduler: { enabled: false },
            sites: [{ name: 'Local', type: 'local' }],
            events: { maxStreamsPerUser: 2, maxSubscribers: 4, tokenRecheckMs: 200, heartbeatMs: 500 },
          },
        },
      });
      agent = new Agent({ connect: { ca: svc.pki.ca.certPem } });
      browser = new Browser(svc);
      alice = await svc.token('alice');
      bob = await svc.token('bob');
    });
    after(async () => {
      await browser?.close();
      await agent?.close();
      await svc?.close();
    });

    /** Alice's tokens from the authorization code flow: they carry the grant they were issued from. */
    async function codeTokens(): Promise<{ access_token: string; grant_id: string }> {
      const pkce = pkcePair();
      const redirectUri = 'http://127.0.0.1:49152/callback';
      const cb = await authorize(browser, { redirectUri, pkce });
      const res = await postForm(svc, '/oauth2/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: redirectUri, client_id: 'test-public', code_verifier: pkce.verifier });
      assert.equal(res.status, 200, res.text);
      const claims = JSON.parse(Buffer.from(String(res.json.access_token).split('.')[1]!, 'base64url').toString()) as { grant_id: string };
      return { access_token: res.json.access_token, grant_id: claims.grant_id };
    }

    it('refuses a user’s stream beyond jobs.events.maxStreamsPerUser with 429 before it starts, and frees the place when one closes', async () => {
      const streams: Stream[] = [];
      try {
        for (let i = 0; i < 2; i++) {
          const s = await openStream(svc, agent, alice);
          streams.push(s);
          assert.equal(s.status, 200);
          await s.waitFor((e) => e.event === 'ready');
        }
        const refused = await openStream(svc, agent, alice);
        assert.equal(refused.status, 429);
        assert.equal(refused.json?.error, 'too_many_requests');
        assert.match(refused.json?.error_description ?? '', /alice has 2 event streams open on this instance, the most jobs\.events\.maxStreamsPerUser \(2\) allows/);
        assert.match(String(refused.headers['retry-after']), /^[1-9]\d*$/);
        // Another user is not counted against alice.
        const bobs = await openStream(svc, agent, bob);
        streams.push(bobs);
        assert.equal(bobs.status, 200);
        // The instance's limit (4 here): carol's stream is the fourth, the admin's a fifth.
        const carols = await openStream(svc, agent, await svc.token('carol'));
        streams.push(carols);
        assert.equal(carols.status, 200);
        const busy = await openStream(svc, agent, await svc.token('admin', 'dirigo_admin'));
        assert.equal(busy.status, 503);
        assert.match(busy.json?.error_description ?? '', /this instance has 4 event streams open, the most jobs\.events\.maxSubscribers \(4\) allows/);
        assert.ok(busy.headers['retry-after']);
        // Closing one of alice's streams gives her its place back (once the service sees the close).
        streams.shift()!.close();
        let again: Stream | undefined;
        for (let i = 0; i < 50; i++) {
          again = await openStream(svc, agent, alice);
          if (again.status === 200) break;
          assert.equal(again.status, 429);
          await wait(100);
        }
        assert.equal(again?.status, 200, 'a new stream opens after one closed');
        streams.push(again!);
        await again!.waitFor((e) => e.event === 'ready');
      } finally {
        for (const s of streams) s.close();
      }
      // Every place is freed: alice may open her two again.
      for (let i = 0; i < 50; i++) {
        const probes = [await openStream(svc, agent, alice), await openStream(svc, agent, alice)];
        for (const p of probes) p.close();
        if (probes.every((p) => p.status === 200)) return;
        await wait(100);
      }
      assert.fail('the places of closed streams were not freed');
    });

    it('replays from Last-Event-ID 0.0 nothing to a user without jobs, reading only the jobs the caller may see', async () => {
      // Alice has jobs with history, and so has another owner, many of them; carol has none.
      await bulkJobs(svc, 2000);
      const jids = [];
      for (let i = 0; i < 3; i++) jids.push(await submit(svc, alice, { Executable: '/bin/true', JobName: `replayed${i}` }));
      const carol = await svc.token('carol');
      const carols = await openWhenFree(svc, agent, carol, { 'last-event-id': '0.0' });
      try {
        assert.equal(carols.status, 200);
        await carols.waitFor((e) => e.event === 'ready');
        assert.deepEqual(
          carols.events.map((e) => e.event),
          ['ready'],
          'nothing replayed to a user without jobs',
        );
      } finally {
        carols.close();
      }
      // Alice's own replay has her jobs' history (Received, Waiting).
      const alices = await openWhenFree(svc, agent, alice, { 'last-event-id': '0.0' }, '?JobName=replayed1');
      try {
        await alices.waitFor((e) => e.event === 'ready');
        const replayed = alices.events.filter((e) => e.event === 'status').map((e) => JSON.parse(e.data) as { JobID: number; Status: string });
        assert.deepEqual(
          replayed.map((e) => [e.JobID, e.Status]),
          [
            [jids[1], 'Received'],
            [jids[1], 'Waiting'],
          ],
        );
      } finally {
        alices.close();
      }

      // The replay's queries name the owner in SQL (not a filter in JavaScript afterwards).
      const scope = { visibility: { kind: 'own' as const, owner: 'carol' }, restrictions: {} };
      const since = new Date(Date.now() - 3600_000).toISOString();
      for (const query of [historyQuery(svc.ctx.db, { after: 0, upTo: 1e9, since, scope, limit: 11 }), parameterQuery(svc.ctx.db, { after: 0, upTo: 1e9, since, scope, limit: 11 })]) {
        const compiled = query.compile();
        assert.match(compiled.sql, /"jobs"\."owner" = (\?|\$\d+)/);
        assert.ok(compiled.parameters.includes('carol'));
      }
      // And the database reads the history through the owner index, starting from the caller's jobs
      // (PostgreSQL with its statistics, as autovacuum keeps them; SQLite has none, as in production).
      const compiled = historyQuery(svc.ctx.db, { after: 0, upTo: 1e9, since, scope, limit: 11 }).compile();
      if (dialect === 'sqlite') {
        const plan = await sql.raw<{ detail: string }>(`explain query plan ${inline(compiled.sql, compiled.parameters)}`).execute(svc.ctx.db);
        const details = plan.rows.map((r) => r.detail);
        assert.match(details[0] ?? '', /SEARCH jobs USING (COVERING )?INDEX jobs_owner_id \(owner=\?\)/, details.join('\n'));
        assert.match(details.join('\n'), /SEARCH h USING INDEX job_status_history_job \(job_id=\? AND id>\? AND id<\?\)/);
      } else {
        await sql`analyze`.execute(svc.ctx.db);
        const plan = await sql.raw<{ 'QUERY PLAN': string }>(`explain ${inline(compiled.sql, compiled.parameters)}`).execute(svc.ctx.db);
        const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
        assert.match(text, /Index Scan using jobs_owner_id on jobs/, text);
        assert.match(text, /Index Scan using job_status_history_job on job_status_history h/, text);
      }
    });

    it('ends a stream when its access token is revoked (RFC 7009) or its grant is revoked from the account', async () => {
      const first = await codeTokens();
      const revoked = await openWhenFree(svc, agent, first.access_token);
      await revoked.waitFor((e) => e.event === 'ready');
      const res = await postForm(svc, '/oauth2/revoke', { token: first.access_token, token_type_hint: 'access_token', client_id: 'test-public' });
      assert.equal(res.status, 200);
      const end = await revoked.waitFor((e) => e.event === 'end');
      assert.match(JSON.parse(end.data).reason, /the access token has been revoked/);
      assert.ok(await within(revoked.ended, 10_000), 'the stream is closed');
      assert.equal((await openStream(svc, agent, first.access_token)).status, 401, 'and cannot be opened again');

      const second = await codeTokens();
      const granted = await openWhenFree(svc, agent, second.access_token);
      await granted.waitFor((e) => e.event === 'ready');
      const del = await svc.request(`/oauth2/account/grants/${second.grant_id}`, { method: 'DELETE', token: second.access_token });
      assert.equal(del.status, 204, del.text);
      const ended = await granted.waitFor((e) => e.event === 'end');
      assert.match(JSON.parse(ended.data).reason, /revoked/);
      assert.ok(await within(granted.ended, 10_000), 'the stream is closed');
    });

    it('ends a stream when its access token expires, not before', async () => {
      const { token, claims } = await svc.ctx.tokens.issue({ username: 'alice', subjectKind: 'user', clientId: 'dirigo-certificate', scope: 'wlcg.groups', group: 'dirigo_user', setup: TEST_SETUP, lifetimeSeconds: 2 });
      const stream = await openWhenFree(svc, agent, token);
      assert.equal(stream.status, 200);
      await stream.waitFor((e) => e.event === 'ready');
      const end = await stream.waitFor((e) => e.event === 'end', 15_000);
      assert.ok(Date.now() >= claims.exp * 1000 - 100, 'not before the token expires');
      assert.match(JSON.parse(end.data).reason, /the access token has expired/);
      assert.ok(await within(stream.ended, 10_000), 'the stream is closed');
    });

    it('sends each change to the streams that may see its job: its owner, its group’s sharers, the monitors', async () => {
      const prodAlice = await svc.token('alice', 'dirigo_prod');
      const carolProd = await svc.token('carol', 'dirigo_prod');
      const streams = {
        owner: await openWhenFree(svc, agent, prodAlice),
        sharer: await openWhenFree(svc, agent, carolProd, {}, '?allOwners=true'),
        notShared: await openWhenFree(svc, agent, carolProd),
        other: await openWhenFree(svc, agent, bob, {}, '?allOwners=true'),
      };
      try {
        for (const s of Object.values(streams)) await s.waitFor((e) => e.event === 'ready');
        const jid = await submit(svc, prodAlice, { Executable: '/bin/true', JobName: 'shared' });
        for (const s of [streams.owner, streams.sharer]) await s.waitFor((e) => e.event === 'status' && JSON.parse(e.data).JobID === jid && JSON.parse(e.data).Status === 'Waiting');
        // A later change of bob's own, seen by bob, tells that alice's had been handled for everyone.
        const bobs = await submit(svc, bob, { Executable: '/bin/true', JobName: 'bobs' });
        await streams.other.waitFor((e) => e.event === 'status' && JSON.parse(e.data).JobID === bobs && JSON.parse(e.data).Status === 'Waiting');
        for (const s of [streams.notShared, streams.other]) assert.ok(!s.events.some((e) => e.event === 'status' && JSON.parse(e.data).JobID === jid), 'not shared with them');
      } finally {
        for (const s of Object.values(streams)) s.close();
      }
    });
  });
}

/** `n` jobs of an owner outside the registry, with three history rows each, written straight to the tables. */
async function bulkJobs(svc: TestService, n: number): Promise<void> {
  const now = new Date().toISOString();
  const columns = 'job_name, job_group, job_type, owner, owner_dn, owner_group, setup, site, status, minor_status, application_status, user_priority, reschedule_counter, submission_time, last_update_time, manifest';
  const values = `'bulk', 'bulk', 'User', 'someone', 'CN=someone', 'elsewhere', '${TEST_SETUP}', 'ANY', 'Waiting', 'm', 'Unknown', 0, 0, '${now}', '${now}', '{}'`;
  const numbers = svc.dialect === 'postgres' ? `select generate_series(1, ${n}) as i` : `with recursive s(i) as (select 1 union all select i + 1 from s where i < ${n}) select i from s`;
  await sql.raw(`insert into jobs (${columns}) select ${values} from (${numbers}) as numbers`).execute(svc.ctx.db);
  await sql
    .raw(`insert into job_status_history (job_id, status, minor_status, application_status, status_time, source) select job_id, 'Waiting', 'm', 'Unknown', '${now}', 'bulk' from jobs cross join (select 1 as k union all select 2 union all select 3) as three where owner = 'someone'`)
    .execute(svc.ctx.db);
}

/** The compiled query with its parameters written in (EXPLAIN takes no bind parameters on PostgreSQL). */
function inline(text: string, parameters: readonly unknown[]): string {
  const literal = (v: unknown) => (typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`);
  let i = 0;
  return text.replace(/\$(\d+)|\?/g, (m, n: string | undefined) => literal(parameters[n ? Number(n) - 1 : i++]));
}
