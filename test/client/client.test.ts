/**
 * Issue 16, test 3: a program written against the generated client (packages/client, type-checked with
 * the rest of the tests under `tsc --strict`) calls every operation of the document against a running
 * server, on SQLite and PostgreSQL. Every answer's status must be one the document gives that operation.
 * The browser pages are called as a browser without a sign-in in progress would call them: they answer
 * with their documented refusals (test/auth drives them through whole sign-ins).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { packFiles } from '../../src/payload/sandbox-archive.ts';
import { sandboxUrlSigner } from '../../src/jobs/sandbox-urls.ts';
import {
  accountingCsv,
  accountingQueue,
  accountingRecords,
  accountingUsage,
  certificateToken,
  cataloguePath,
  createDirigoClient,
  DirigoApiError,
  downloadSandbox,
  downloadSandboxToFile,
  fetchSandbox,
  putToPresigned,
  uploadSandbox,
  refreshToken,
  streamJobs,
  submitWithFiles,
  unwrap,
  type DirigoClient,
} from '@dirigo/client';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { basic, oauthConfig, RS_SECRET } from '../helpers/oauth-kit.ts';
import { FINAL, untar } from '../jobs/helpers.ts';
import { RegistryAdmin } from '../../src/registry/index.ts';

type Operation = { operationId: string; responses: Record<string, unknown> };
const DOCUMENT = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../packages/client/openapi.json'), 'utf8')) as { paths: Record<string, Record<string, Operation>> };

/** Method + path → the document's operation, by the path templates: literal segments first (/jobs/shares before /jobs/{jid}), as the server routes them. */
const ROUTES = Object.entries(DOCUMENT.paths)
  .flatMap(([template, item]) =>
    Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`), params: template.split('{').length, op })),
  )
  .sort((a, b) => a.params - b.params);

const FORM = { 'content-type': 'application/x-www-form-urlencoded' } as const;

for (const { dialect, skip } of await dialects()) {
  describe(`the generated client calls every operation (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: DirigoClient;
    let pilot: DirigoClient;
    let anonymous: DirigoClient;
    let aliceToken: string;
    const seen = new Map<string, number[]>();
    const undocumented: string[] = [];

    /** A client that records which operation answered with which status. */
    const client = (options: { token?: string; user?: string }) => {
      const c = createDirigoClient({
        url: svc.url,
        ca: readFileSync(svc.pki.caFile),
        ...(options.token ? { token: options.token } : {}),
        ...(options.user ? { cert: svc.pki.users[options.user]!.certPem, key: svc.pki.users[options.user]!.keyPem } : {}),
      });
      c.use({
        onResponse({ request, response }) {
          const path = new URL(request.url).pathname;
          const route = ROUTES.find((r) => r.method === request.method && r.pattern.test(path));
          if (!route) return void undocumented.push(`${request.method} ${path}: no such operation`);
          seen.set(route.op.operationId, [...(seen.get(route.op.operationId) ?? []), response.status]);
          const statuses = Object.keys(route.op.responses);
          if (!statuses.includes(String(response.status)) && !(response.status >= 500 && statuses.includes('5XX'))) {
            undocumented.push(`${route.op.operationId}: answered ${response.status}, documented ${statuses.join(' ')}`);
          }
        },
      });
      return c;
    };

    before(async () => {
      const jobs = { scheduler: { pollIntervalMs: 50 }, sites: [{ name: 'Local', type: 'local', slots: 2 }, { name: 'Pool', type: 'agents' }] };
      const config = await oauthConfig();
      // The registry API's operations need a group with Admin.
      const registry = config.registry as { groups: { name: string; properties: string[] }[] };
      registry.groups = registry.groups.map((g) => (g.name === 'dirigo_admin' ? { ...g, properties: [...g.properties, 'Admin'] } : g));
      // A group with the Admin property, whose members may read the registry through SCIM.
      (config.registry as { groups: unknown[] }).groups.push({ name: 'vo_admin', members: ['admin'], properties: ['Admin'] });
      svc = await startTestService({ dialect, config: { ...config, jobs } });
      aliceToken = await svc.token('alice');
      alice = client({ token: aliceToken });
      pilot = client({ token: await svc.token('pilot', 'dirigo_pilot') });
      anonymous = client({});
    });
    after(async () => {
      await Promise.all([alice, pilot, anonymous].map((c) => c?.close()));
      await svc?.close();
    });

    it('probes and discovery', async () => {
      assert.equal(unwrap(await anonymous.GET('/healthz')).status, 'ok');
      assert.equal(unwrap(await anonymous.GET('/readyz')).status, 'ok');
      const metrics = await anonymous.GET('/metrics', { parseAs: 'text' });
      assert.match(String(metrics.data), /^# HELP /m);
      assert.ok(unwrap(await anonymous.GET('/oauth2/jwks')).keys.length > 0);
      assert.equal(unwrap(await anonymous.GET('/.well-known/oauth-authorization-server')).issuer, unwrap(await anonymous.GET('/.well-known/openid-configuration')).issuer);
    });

    it('tokens: flow A by GET and POST, userinfo, device code, introspection, revocation, authorize', async () => {
      const bob = client({ user: 'bob' });
      try {
        assert.ok(unwrap(await bob.GET('/oauth2/groups')).groups.includes('dirigo_user'));
        assert.ok(unwrap(await bob.GET('/oauth2/setups')).setups.length > 0);
        const setup = unwrap(await bob.GET('/oauth2/setups')).setups[0]!;
        const { access_token } = await certificateToken(bob, 'dirigo_user', setup);
        const posted = unwrap(await bob.POST('/oauth2/token', { body: { grant_type: 'client_credentials', group: 'dirigo_user', setup }, headers: FORM }));
        assert.equal(posted.token_type, 'Bearer');
        const asBob = client({ token: access_token });
        assert.equal(unwrap(await asBob.GET('/oauth2/userinfo')).sub, unwrap(await asBob.POST('/oauth2/userinfo', { body: {}, headers: FORM })).sub);
        await asBob.close();
        const device = unwrap(await anonymous.POST('/oauth2/device', { body: { client_id: 'test-public' }, headers: FORM }));
        assert.match(device.user_code, /\w/);
        const introspection = unwrap(await anonymous.POST('/oauth2/introspect', { body: { token: access_token }, headers: { ...FORM, authorization: basic('test-rs', RS_SECRET) } }));
        assert.equal(introspection.active, true);
        const revoked = await anonymous.POST('/oauth2/revoke', { body: { token: access_token, client_id: 'test-public' }, headers: FORM });
        // RFC 7009 §2.1: a client revokes only its own tokens; a flow A token belongs to no client.
        assert.equal(revoked.error?.error, 'unauthorized_client');
        // RFC 6749 §5.2: an unknown refresh token is invalid_grant, thrown as the shared error body.
        await assert.rejects(refreshToken(anonymous, 'not-a-refresh-token', 'test-public'), (err: unknown) => {
          assert.ok(err instanceof DirigoApiError);
          assert.deepEqual([err.status, err.error], [400, 'invalid_grant']);
          assert.match(String(err.requestId), /\w/);
          return true;
        });
        const authorize = await anonymous.GET('/oauth2/auth', { params: { query: { client_id: 'nobody', response_type: 'code' } }, redirect: 'manual' });
        assert.equal(authorize.response.status, 400);
      } finally {
        await bob.close();
      }
    });

    it('the sign-in, consent, device and sign-out pages, without a sign-in in progress', async () => {
      const answers = [
        await anonymous.GET('/oauth2/device', { parseAs: 'text' }),
        await anonymous.GET('/oauth2/interaction/{id}', { params: { path: { id: 'no-such-interaction' } }, parseAs: 'text' }),
        await anonymous.POST('/oauth2/login', { body: { interaction: 'none', username: 'alice', password: 'wrong' } as never, headers: FORM, parseAs: 'text' }),
        await anonymous.POST('/oauth2/login/certificate', { body: { interaction: 'none' } as never, headers: FORM, parseAs: 'text' }),
        await anonymous.POST('/oauth2/login/{provider}', { params: { path: { provider: 'nowhere' } }, body: { interaction: 'none' } as never, headers: FORM, parseAs: 'text' }),
        await anonymous.POST('/oauth2/consent', { body: { interaction: 'none', decision: 'deny' } as never, headers: FORM, parseAs: 'text' }),
        await anonymous.POST('/oauth2/aup', { body: { interaction: 'none', version: 'v1' } as never, headers: FORM, parseAs: 'text' }),
        await anonymous.POST('/oauth2/device/verify', { body: { user_code: 'ABCD-EFGH' } as never, headers: FORM, parseAs: 'text', redirect: 'manual' }),
        await anonymous.GET('/oauth2/logout', { parseAs: 'text', redirect: 'manual' }),
        await anonymous.POST('/oauth2/logout', { body: {} as never, headers: FORM, parseAs: 'text', redirect: 'manual' }),
        await anonymous.POST('/oauth2/logout/confirm', { body: {} as never, headers: FORM, parseAs: 'text', redirect: 'manual' }),
      ];
      for (const a of answers) assert.ok(a.response.status < 500, `${a.response.url}: ${a.response.status}`);
    });

    it('the account: who I am, my grants and my sessions', async () => {
      const account = unwrap(await alice.GET('/oauth2/account'));
      assert.deepEqual([account.username, account.group], ['alice', 'dirigo_user']);
      assert.ok(account.groups.some((g) => g.name === 'dirigo_prod' && g.properties.includes('JobSharing')));
      // A flow A token comes from no grant, and alice has not signed in with a browser here.
      assert.deepEqual(unwrap(await alice.GET('/oauth2/account/grants')).grants, []);
      assert.deepEqual(unwrap(await alice.GET('/oauth2/account/sessions')).sessions, []);
      const grant = await alice.DELETE('/oauth2/account/grants/{grantId}', { params: { path: { grantId: '00000000-0000-4000-8000-000000000000' } } });
      assert.deepEqual([grant.response.status, grant.error?.error], [404, 'not_found']);
      const session = await alice.DELETE('/oauth2/account/sessions/{sessionId}', { params: { path: { sessionId: 'A'.repeat(32) } } });
      assert.deepEqual([session.response.status, session.error?.error], [404, 'not_found']);
    });

    it('jobs: submit (JSON and multipart), list, get, manifest, sandboxes, kill', async () => {
      const { jids } = unwrap(await alice.POST('/jobs', { body: { Executable: '/bin/sh', Arguments: '-c "echo hi > out.txt"', OutputSandbox: ['out.txt'], Sites: ['Local'] } }));
      const jid = jids[0]!;
      const withFiles = await submitWithFiles(alice, [{ Executable: 'run.sh', InputSandbox: ['run.sh'], Sites: ['Local'] }], [{ name: 'run.sh', content: '#!/bin/sh\necho ok\n' }]);
      assert.equal(withFiles.jids.length, 1);
      const listed = unwrap(await alice.GET('/jobs', { params: { query: { maxJobs: 10, JobID: [jid] } } }));
      assert.deepEqual(listed.jobs.map((j) => j.JobID), [jid]);
      const streamed: number[] = [];
      for await (const job of streamJobs(alice, { JobID: [jid, withFiles.jids[0]!], sort: ['JobID'] })) streamed.push(job.JobID!);
      assert.deepEqual(streamed, [jid, withFiles.jids[0]]);
      const stream = await alice.GET('/jobs/events', { params: { query: { JobID: [jid] } }, parseAs: 'stream' });
      assert.equal(stream.response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      const reader = (stream.data as ReadableStream<Uint8Array>).getReader();
      let text = '';
      while (!text.includes('event: ready')) text += new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      const found = unwrap(await alice.POST('/jobs/search', { body: { search: [{ parameter: 'JobID', operator: 'in', values: [jid] }], parameters: ['JobID', 'Owner'] } }));
      assert.deepEqual(found.jobs, [{ JobID: jid, Owner: 'alice' }]);
      const counted = unwrap(await alice.GET('/jobs/summary', { params: { query: { groupBy: ['Owner'], JobID: [jid] } } }));
      assert.deepEqual(counted.summary, [{ Owner: 'alice', count: 1 }]);
      const why = unwrap(await alice.GET('/jobs/{jid}/matching', { params: { path: { jid } } }));
      assert.equal(why.JobID, jid);
      // Matched or running by now, most likely: the answer says so (a Waiting job would list Local).
      assert.ok(why.summary.length > 0 && (why.Status !== 'Waiting' || why.resources.some((r) => r.site === 'Local')));
      const shares = unwrap(await alice.GET('/jobs/shares'));
      assert.ok(shares.halfLifeSeconds > 0);
      let job = unwrap(await alice.GET('/jobs/{jid}', { params: { path: { jid } } }));
      for (const deadline = Date.now() + 20000; !FINAL.includes(String(job.Status)) && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 50));
        job = unwrap(await alice.GET('/jobs/{jid}', { params: { path: { jid } } }));
      }
      assert.equal(job.Status, 'Done');
      const peeked = await alice.GET('/jobs/{jid}/peek', { params: { path: { jid }, query: { bytes: 100 } }, parseAs: 'text' });
      assert.equal(peeked.response.status, 409, 'a Done job: its output is in the output sandbox');
      assert.ok(job.StatusHistory.length > 0);
      const manifest = unwrap(await alice.GET('/jobs/{jid}/manifest', { params: { path: { jid } } }));
      assert.ok(typeof manifest === 'object', 'JSON unless JDL is asked for');
      assert.equal(manifest.Executable, '/bin/sh');
      const jdl = await alice.GET('/jobs/{jid}/manifest', { params: { path: { jid } }, headers: { accept: 'text/x-jdl' }, parseAs: 'text' });
      assert.match(String(jdl.data), /^\s*Executable = "\/bin\/sh";$/m);
      const out = await downloadSandbox(alice, jid, 'output');
      assert.ok(out?.etag);
      const files = await untar(Buffer.concat(await Readable.fromWeb(out.body as never).toArray()));
      assert.equal(files.get('out.txt')?.toString(), 'hi\n');
      assert.equal(await downloadSandbox(alice, jid, 'output', out.etag), undefined, '304 for the current ETag');
      const file = join(mkdtempSync(join(tmpdir(), 'dirigo-client-')), 'out.tar.gz');
      assert.equal(await downloadSandboxToFile(alice, jid, 'output', file), true);
      assert.equal((await untar(readFileSync(file))).get('out.txt')?.toString(), 'hi\n');
      await assert.rejects(downloadSandbox(alice, 999999, 'output'), (err: unknown) => err instanceof DirigoApiError && err.status === 404 && err.error === 'not_found');
      const input = await downloadSandbox(alice, withFiles.jids[0]!, 'input');
      assert.ok((await Readable.fromWeb(input!.body as never).toArray()).length > 0);
      const sleeper = unwrap(await alice.POST('/jobs', { body: { Executable: '/bin/sleep', Arguments: '30', Sites: ['Local'] } })).jids[0]!;
      assert.equal(unwrap(await alice.DELETE('/jobs/{jid}', { params: { path: { jid: sleeper } } })).Status, 'Killed');
      const other = unwrap(await alice.POST('/jobs', { body: { Executable: '/bin/sleep', Arguments: '30', Sites: ['Local'] } })).jids[0]!;
      assert.deepEqual(unwrap(await alice.POST('/jobs/kill', { body: { jids: [other] } })).results, [{ jid: other, Status: 'Killed' }]);
      const refused = unwrap(await alice.POST('/jobs/reschedule', { body: { jids: [sleeper] } })).results[0]!;
      assert.ok('error' in refused || refused.Status === 'Waiting', 'answered per job');
      assert.equal(unwrap(await alice.POST('/jobs/delete', { body: { jids: [jid] } })).results[0]?.jid, jid);
      const parked = unwrap(await alice.POST('/jobs', { body: { Executable: '/bin/true', Sites: ['Pool'] } })).jids[0]!;
      assert.deepEqual(unwrap(await alice.POST('/jobs/hold', { body: { jids: [parked] } })).results, [{ jid: parked, Status: 'Received' }]);
      assert.deepEqual(unwrap(await alice.POST('/jobs/release', { body: { jids: [parked] } })).results, [{ jid: parked, Status: 'Waiting' }]);
      unwrap(await alice.POST('/jobs/kill', { body: { jids: [parked] } }));
    });

    it('sandboxes: announce, upload to the presigned URL, download from one, refer to it', async () => {
      const bytes = readFileSync(join(import.meta.dirname, '..', '..', 'package.json'));
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const announced = await alice.POST('/sandboxes', { body: { sha256, size: bytes.length } });
      assert.equal(announced.response.status, 201);
      const upload = announced.data as { upload: { url: string } };
      const url = new URL(upload.upload.url);
      const query = Object.fromEntries(url.searchParams) as { expires: string; signature: string; size?: string };
      const put = await anonymous.PUT('/sandboxes/{sha256}/content', {
        params: { path: { sha256 }, query },
        body: bytes as never,
        bodySerializer: (b) => b as unknown as ArrayBuffer,
        headers: { 'content-type': 'application/octet-stream' },
      });
      assert.deepEqual(unwrap(put), { sha256, size: bytes.length });
      const exists = await alice.POST('/sandboxes', { body: { sha256, size: bytes.length } });
      assert.equal(exists.response.status, 200);
      const signed = new URL((await sandboxUrlSigner(svc.ctx.db)).sign({ method: 'GET', sha256, expires: Math.floor(Date.now() / 1000) + 60, name: 'p.json' }), svc.url);
      const down = await anonymous.GET('/sandboxes/{sha256}/content', {
        params: { path: { sha256 }, query: Object.fromEntries(signed.searchParams) as { expires: string; signature: string } },
        parseAs: 'arrayBuffer',
      });
      assert.deepEqual(Buffer.from(down.data as ArrayBuffer), bytes);
      const ref = await alice.POST('/jobs', { body: { Executable: '/bin/true', InputSandboxRef: `sha256:${sha256}`, Sites: ['Pool'] } });
      assert.equal(ref.response.status, 201);
      unwrap(await alice.POST('/jobs/kill', { body: { jids: unwrap(ref).jids } }));
    });

    it('workflows: submit, list, get, kill', async () => {
      const submitted = unwrap(
        await alice.POST('/workflows', {
          body: { Name: 'client', Jobs: [{ NodeName: 'first', Executable: '/bin/sleep', Arguments: '30', Sites: ['Pool'] }, { NodeName: 'second', Executable: '/bin/true', DependsOn: ['first'] }] },
        }),
      );
      assert.deepEqual(Object.keys(submitted.Nodes), ['first', 'second']);
      const path = { wid: submitted.WorkflowID };
      assert.ok(unwrap(await alice.GET('/workflows', { params: { query: { maxItems: 10 } } })).Workflows.some((w) => w.WorkflowID === submitted.WorkflowID));
      const described = unwrap(await alice.GET('/workflows/{wid}', { params: { path } }));
      assert.deepEqual(described.Jobs.map((j) => j.Parents.length), [0, 1]);
      const held = unwrap(await alice.POST('/workflows/{wid}/hold', { params: { path } }));
      assert.deepEqual(held.results.map((r) => ('Status' in r ? r.Status : r.error)), ['Received', 'Received']);
      const released = unwrap(await alice.POST('/workflows/{wid}/release', { params: { path } }));
      assert.equal(released.results.length, 2, 'answered per job');
      const killed = unwrap(await alice.POST('/workflows/{wid}/kill', { params: { path } }));
      assert.deepEqual(killed.results.map((r) => r.jid).sort((a, b) => a - b), submitted.JobIDs);
    });

    it('agents: match, heartbeat, input sandbox, status, output sandbox, finish', async () => {
      const [jid] = (await submitWithFiles(alice, [{ Executable: 'run.sh', InputSandbox: ['run.sh'], Sites: ['Pool'] }], [{ name: 'run.sh', content: '#!/bin/sh\n' }])).jids;
      const agentId = `client-${dialect}`;
      const matched = unwrap(await pilot.POST('/agents/match', { body: { agentId, site: 'Pool', slots: 1 } }));
      assert.deepEqual(matched.jobs.map((j) => j.JobID), [jid]);
      unwrap(await pilot.POST('/agents/heartbeat', { body: { agentId, jobs: [jid!] } }));
      const input = await pilot.GET('/agents/jobs/{jid}/inputsandbox', { params: { path: { jid: jid! }, query: { agentId } }, parseAs: 'arrayBuffer' });
      assert.equal(input.response.status, 200);
      unwrap(await pilot.POST('/agents/jobs/{jid}/status', { params: { path: { jid: jid! } }, body: { agentId, status: 'Running' } }));
      // The payload reports with its own token, which the match gave the agent for it.
      const reported = await pilot.POST('/jobs/{jid}/report', {
        params: { path: { jid: jid! } },
        headers: { authorization: `Bearer ${matched.jobs[0]!.JobToken}` },
        body: { ApplicationStatus: 'step 1/1', Parameters: { events: '10' } },
      });
      assert.deepEqual(unwrap(reported), { jid, Status: 'Running' });
      unwrap(await pilot.POST('/agents/jobs/{jid}/status', { params: { path: { jid: jid! } }, body: { agentId, status: 'Completing' } }));
      const upload = await pilot.PUT('/agents/jobs/{jid}/outputsandbox', {
        params: { path: { jid: jid! }, query: { agentId } },
        body: input.data as never,
        bodySerializer: (b) => b as unknown as ArrayBuffer,
        headers: { 'content-type': 'application/gzip' },
      });
      assert.equal(upload.response.status, 200);
      // The direct path: announce, upload to the presigned URL, record.
      const output = Buffer.from(input.data as ArrayBuffer);
      const ref = { agentId, sha256: createHash('sha256').update(output).digest('hex'), size: output.length };
      const announced = await pilot.POST('/agents/jobs/{jid}/outputsandbox/upload', { params: { path: { jid: jid! } }, body: ref });
      assert.equal(announced.response.status, 200, 'stored already by the upload through the API');
      assert.deepEqual(unwrap(await pilot.POST('/agents/jobs/{jid}/outputsandbox/commit', { params: { path: { jid: jid! } }, body: ref })), { sha256: ref.sha256, size: ref.size });
      assert.equal(unwrap(await pilot.POST('/agents/jobs/{jid}/finish', { params: { path: { jid: jid! } }, body: { agentId, outcome: 'done', exitCode: 0, minorStatus: 'Execution complete' } })).Status, 'Done');
    });

    it('sandboxes by the direct path: announce, signed PUT and GET, submit by reference, fetch checked, agents upload and commit', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'client-direct-'));
      writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\necho direct > out.txt\n');
      const chunks: Buffer[] = [];
      for await (const c of packFiles([{ name: 'run.sh', path: join(dir, 'run.sh'), mode: 0o755 }])) chunks.push(c as Buffer);
      const archive = Buffer.concat(chunks);
      const sha256 = createHash('sha256').update(archive).digest('hex');
      // The parts by typed calls: POST /sandboxes, then the signed PUT of the file store's URL.
      const announced = unwrap(await alice.POST('/sandboxes', { body: { sha256, size: archive.length } }));
      assert.equal(announced.exists, false);
      const target = new URL((announced as { upload: { url: string } }).upload.url, svc.url);
      const query = Object.fromEntries(target.searchParams) as { expires: string; signature: string };
      const put = await anonymous.PUT('/sandboxes/{sha256}/content', {
        params: { path: { sha256 }, query },
        body: archive as never,
        bodySerializer: (b) => b as unknown as ArrayBuffer,
        headers: (announced as { upload: { headers: Record<string, string> } }).upload.headers,
      });
      assert.equal(put.response.status, 200);
      // The helper: the same bytes again are not sent.
      const again = await uploadSandbox(alice, archive);
      assert.deepEqual({ ref: again.ref, existed: again.existed }, { ref: `sha256:${sha256}`, existed: true });
      const { jids } = unwrap(await alice.POST('/jobs', { body: { Executable: 'run.sh', InputSandbox: ['run.sh'], InputSandboxRef: again.ref, OutputSandbox: ['out.txt'], Sites: ['Local'] } }));
      const input = await fetchSandbox(alice, jids[0]!, 'input');
      assert.equal(input!.sha256, sha256);
      assert.deepEqual(Buffer.from(await new Response(input!.body).arrayBuffer()), archive);
      // A signed GET, as a store that presigns downloads hands out.
      const signer = await sandboxUrlSigner(svc.ctx.db);
      const get = new URL(signer.sign({ method: 'GET', sha256, expires: Math.floor(Date.now() / 1000) + 60 }), svc.url);
      const got = await anonymous.GET('/sandboxes/{sha256}/content', { params: { path: { sha256 }, query: Object.fromEntries(get.searchParams) as never }, parseAs: 'arrayBuffer' });
      assert.deepEqual(Buffer.from(got.data as ArrayBuffer), archive);
      // An agent's output by upload, PUT and commit.
      const [jid] = (await submitWithFiles(alice, [{ Executable: 'run.sh', InputSandbox: ['run.sh'], Sites: ['Pool'] }], [{ name: 'run.sh', content: '#!/bin/sh\n' }])).jids;
      const agentId = `client-direct-${dialect}`;
      assert.deepEqual(unwrap(await pilot.POST('/agents/match', { body: { agentId, site: 'Pool', slots: 1 } })).jobs.map((j) => j.JobID), [jid]);
      unwrap(await pilot.POST('/agents/jobs/{jid}/status', { params: { path: { jid: jid! } }, body: { agentId, status: 'Running' } }));
      const out = unwrap(await pilot.POST('/agents/jobs/{jid}/outputsandbox/upload', { params: { path: { jid: jid! } }, body: { agentId, sha256, size: archive.length } }));
      if (!out.exists) await putToPresigned(pilot, out.upload, archive, archive.length);
      assert.equal(unwrap(await pilot.POST('/agents/jobs/{jid}/outputsandbox/commit', { params: { path: { jid: jid! } }, body: { agentId, sha256, size: archive.length } })).sha256, sha256);
      assert.equal(unwrap(await pilot.POST('/agents/jobs/{jid}/finish', { params: { path: { jid: jid! } }, body: { agentId, outcome: 'done', exitCode: 0, minorStatus: 'Execution complete' } })).Status, 'Done');
      const output = await fetchSandbox(alice, jid!, 'output');
      assert.deepEqual(Buffer.from(await new Response(output!.body).arrayBuffer()), archive);
    });

    it('pilots: register, renew the pilot token, end', async () => {
      const registered = unwrap(await pilot.POST('/pilots', { body: { site: 'Pool', slots: 1 } }));
      assert.equal(registered.AgentID, `pilot-${registered.PilotID}`);
      const path = { pid: registered.PilotID };
      const renewed = unwrap(await pilot.POST('/pilots/{pid}/token', { params: { path }, headers: { authorization: `Bearer ${registered.access_token}` }, body: {} }));
      assert.equal(renewed.token_type, 'Bearer');
      const ended = unwrap(await pilot.POST('/pilots/{pid}/end', { params: { path }, headers: { authorization: `Bearer ${renewed.access_token}` }, body: { state: 'Done', reason: 'client test' } }));
      assert.deepEqual(ended, { PilotID: registered.PilotID, State: 'Done' });
    });

    it('the pilot registry: search, summary, one pilot, its output, a drain', async () => {
      const registered = unwrap(await pilot.POST('/pilots', { body: { site: 'Pool', slots: 1 } }));
      const path = { pid: registered.PilotID };
      const admin = client({ token: await svc.token('admin', 'dirigo_admin') });
      try {
        const found = unwrap(await admin.GET('/pilots', { params: { query: { site: 'Pool', state: ['Running'] } } }));
        assert.ok(found.pilots.some((p) => p.PilotID === registered.PilotID));
        assert.ok(unwrap(await admin.GET('/pilots/summary')).summary.some((r) => r.Site === 'Pool' && r.State === 'Running'));
        assert.equal(unwrap(await admin.GET('/pilots/{pid}', { params: { path } })).Origin, 'manual');
        // A hand-started pilot has no batch output.
        assert.equal((await admin.GET('/pilots/{pid}/logs', { params: { path }, parseAs: 'text' })).response.status, 404);
        assert.deepEqual(unwrap(await admin.POST('/pilots/command', { body: { command: 'drain', pilots: [registered.PilotID] } })), { command: 'drain', pilots: [registered.PilotID] });
      } finally {
        await admin.close();
      }
    });

    it('the file catalogue: fields, directories, files, metadata, search, bulk, removal', async () => {
      const admin = client({ token: await svc.token('admin', 'dirigo_admin') });
      try {
        unwrap(await admin.POST('/filecatalogue/metadata', { body: { Name: 'ClientRun', Type: 'int', Scope: 'directory' } }));
        unwrap(await admin.POST('/filecatalogue/metadata', { body: { Name: 'ClientGone', Type: 'string', Scope: 'file' } }));
        unwrap(await admin.DELETE('/filecatalogue/metadata/{name}', { params: { path: { name: 'ClientGone' } } }));
        const dir = { path: { path: cataloguePath(`/client-${dialect}/run1`) } };
        const file = { path: { path: cataloguePath(`/client-${dialect}/run1/a.root`) } };
        assert.equal(unwrap(await admin.PUT('/filecatalogue/directory/{path}', { params: dir, body: { Metadata: { ClientRun: 1 } } })).Path, `/client-${dialect}/run1`);
        unwrap(await admin.PUT('/filecatalogue/directory/{path}/metadata', { params: dir, body: { ClientRun: 2 } }));
        assert.equal(unwrap(await admin.PUT('/filecatalogue/file/{path}', { params: file, body: { Size: 10, Checksum: 'abcd1234' } })).Size, 10);
        unwrap(await admin.PUT('/filecatalogue/file/{path}/metadata', { params: file, body: {} }));
        assert.equal(unwrap(await admin.GET('/filecatalogue/file/{path}/attributes', { params: file })).Checksum, 'abcd1234');
        assert.equal(unwrap(await admin.GET('/filecatalogue/file/{path}/metadata', { params: file })).ClientRun, 2);
        assert.equal(unwrap(await admin.GET('/filecatalogue/directory/{path}', { params: { ...dir, query: { verbose: true } } })).Files.length, 1);
        assert.deepEqual(unwrap(await admin.GET('/filecatalogue/directory/{path}/metadata', { params: dir })).ClientRun, [2]);
        assert.equal(unwrap(await admin.GET('/filecatalogue/directory/{path}/search', { params: { path: { path: cataloguePath(`/client-${dialect}`) } } })).Files, 1);
        const ranged = { path: { path: cataloguePath(`/client-${dialect}`) }, query: { conditions: { ClientRun: ['>=|2', '<|3'] }, maxFiles: 10 } };
        assert.deepEqual(unwrap(await admin.GET('/filecatalogue/directory/{path}/find', { params: ranged })).Files.map((f) => f.Path), [`/client-${dialect}/run1/a.root`]);
        assert.ok('ClientRun' in unwrap(await admin.GET('/filecatalogue/metadata')));
        const bulk = await admin.POST('/filecatalogue/bulk', {
          body: `{"dir": "/client-${dialect}/bulk"}\n{"file": "/client-${dialect}/bulk/b.root", "size": 1, "checksum": "01"}\n` as never,
          bodySerializer: (b) => b as unknown as string,
          headers: { 'content-type': 'application/x-ndjson' },
        });
        assert.equal(unwrap(bulk).applied, 2);
        unwrap(await admin.DELETE('/filecatalogue/file/{path}', { params: file }));
        unwrap(await admin.DELETE('/filecatalogue/directory/{path}', { params: { path: { path: cataloguePath(`/client-${dialect}`) }, query: { recursive: true } } }));
      } finally {
        await admin.close();
      }
    });

    it('downloads: the list, a file, its checksum line, one that is not there', async () => {
      const dir = join(svc.dataDir, 'downloads');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'notes.txt'), 'offered\n');
      const list = unwrap(await anonymous.GET('/downloads'));
      assert.deepEqual(list.downloads.map((d) => d.name), ['notes.txt']);
      const file = await anonymous.GET('/downloads/{name}', { params: { path: { name: 'notes.txt' } }, parseAs: 'text' });
      assert.equal(file.data, 'offered\n');
      const line = await anonymous.GET('/downloads/{name}', { params: { path: { name: 'notes.txt.sha256' } }, parseAs: 'text' });
      assert.equal(line.data, `${list.downloads[0]!.sha256}  notes.txt\n`);
      assert.equal((await anonymous.GET('/downloads/{name}', { params: { path: { name: 'absent' } } })).response.status, 404);
    });

    it('sites: the list, a ban and an unban by an administrator, the history', async () => {
      const admin = client({ token: await svc.token('admin', 'dirigo_admin') });
      try {
        assert.deepEqual(unwrap(await alice.GET('/sites')).sites.map((s) => [s.name, s.status]), [['Local', 'Active'], ['Pool', 'Active']]);
        assert.equal(unwrap(await admin.POST('/sites/{site}/ban', { params: { path: { site: 'Pool' } }, body: { reason: 'client test' } })).status, 'Banned');
        assert.equal(unwrap(await admin.POST('/sites/{site}/unban', { params: { path: { site: 'Pool' } }, body: {} })).status, 'Active');
        assert.deepEqual(unwrap(await alice.GET('/sites/{site}/history', { params: { path: { site: 'Pool' } } })).history.map((h) => h.status), ['Active', 'Banned']);
      } finally {
        await admin.close();
      }
    });

    it('registry: users, groups, memberships, suspension and the audit log', async () => {
      const admin = client({ token: await svc.token('admin', 'dirigo_admin') });
      try {
        assert.equal(unwrap(await admin.POST('/registry/users', { body: { name: 'zed', email: 'zed@test.example' } })).status, 'active');
        assert.equal(unwrap(await admin.GET('/registry/users', { params: { query: { q: 'zed' } } })).total, 1);
        assert.equal(unwrap(await admin.PATCH('/registry/users/{name}', { params: { path: { name: 'zed' } }, body: { displayName: 'Zed' } })).displayName, 'Zed');
        assert.equal(unwrap(await admin.POST('/registry/groups', { body: { name: 'zgroup', share: 2 } })).share, 2);
        assert.ok(unwrap(await admin.GET('/registry/groups', { params: { query: {} } })).groups.some((g) => g.name === 'zgroup'));
        assert.equal(unwrap(await admin.PATCH('/registry/groups/{name}', { params: { path: { name: 'zgroup' } }, body: { description: 'z' } })).description, 'z');
        assert.deepEqual(unwrap(await admin.PUT('/registry/groups/{name}/members/{user}', { params: { path: { name: 'zgroup', user: 'zed' } }, body: {} })).members, [{ user: 'zed', role: 'member' }]);
        assert.equal(unwrap(await admin.GET('/registry/groups/{name}', { params: { path: { name: 'zgroup' } } })).managedBy, 'api');
        assert.deepEqual(unwrap(await admin.DELETE('/registry/groups/{name}/members/{user}', { params: { path: { name: 'zgroup', user: 'zed' } } })).members, []);
        assert.equal((await admin.DELETE('/registry/groups/{name}', { params: { path: { name: 'zgroup' }, query: {} } })).response.status, 204);
        const suspended = unwrap(await admin.POST('/registry/users/{name}/suspend', { params: { path: { name: 'zed' } }, body: { reason: 'test', killJobs: true } }));
        assert.deepEqual([suspended.barred, suspended.killedJobs], ['suspended: test', 0]);
        assert.equal(unwrap(await admin.POST('/registry/users/{name}/reinstate', { params: { path: { name: 'zed' } } })).status, 'active');
        assert.equal(unwrap(await admin.GET('/registry/users/{name}', { params: { path: { name: 'zed' } } })).name, 'zed');
        assert.equal(unwrap(await admin.DELETE('/registry/users/{name}', { params: { path: { name: 'zed' } } })).status, 'removed');
        assert.equal(unwrap(await admin.GET('/registry/audit', { params: { query: { target: 'zed' } } })).entries[0]!.action, 'user.remove');
      } finally {
        await admin.close();
      }
    });

    it('SCIM: users and groups, filtered and one by one; the discovery endpoints', async () => {
      const admin = client({ token: await svc.token('admin', 'vo_admin') });
      try {
        const users = unwrap(await admin.GET('/scim/v2/Users', { params: { query: { filter: 'userName eq "alice"', count: 10, sortBy: 'userName' } } }));
        assert.deepEqual(users.Resources.map((u) => u.id), ['alice']);
        assert.equal(unwrap(await admin.GET('/scim/v2/Users/{id}', { params: { path: { id: 'alice' }, query: { attributes: 'userName' } } })).userName, 'alice');
        assert.equal((await admin.GET('/scim/v2/Users/{id}', { params: { path: { id: 'nobody' } } })).response.status, 404);
        assert.ok(unwrap(await admin.GET('/scim/v2/Groups', { params: { query: { filter: 'members.value eq "alice"' } } })).Resources.some((g) => g.id === 'dirigo_user'));
        assert.deepEqual(unwrap(await admin.GET('/scim/v2/Groups/{id}', { params: { path: { id: 'vo_admin' } } })).members?.map((m) => m.value), ['admin']);
        assert.equal(unwrap(await anonymous.GET('/scim/v2/ServiceProviderConfig')).filter.supported, true);
        assert.deepEqual(unwrap(await anonymous.GET('/scim/v2/ResourceTypes')).Resources.map((t) => t.id), ['User', 'Group']);
        assert.equal(unwrap(await anonymous.GET('/scim/v2/ResourceTypes/{id}', { params: { path: { id: 'Group' } } })).endpoint, '/Groups');
        assert.equal(unwrap(await anonymous.GET('/scim/v2/Schemas')).totalResults, 4);
        const schema = unwrap(await anonymous.GET('/scim/v2/Schemas/{id}', { params: { path: { id: 'urn:ietf:params:scim:schemas:core:2.0:User' } } }));
        assert.ok(schema.attributes.some((a) => a.name === 'userName'));
      } finally {
        await admin.close();
      }
    });

    it('accounting: usage, the records, the queue history and the APEL summary', async () => {
      const admin = client({ token: await svc.token('admin', 'dirigo_admin') });
      try {
        const usage = await accountingUsage(admin, { interval: 'total', groupBy: 'Site', allOwners: true });
        assert.equal(usage.interval, 'total');
        assert.ok(usage.rows.every((r) => typeof r.Jobs === 'number'));
        assert.match(await accountingCsv(alice, '/accounting/jobs', { interval: 'day' }), /^Time,Group,Jobs,WallHours,CoreHours,CPUHours,CPUEfficiency\r\n/);
        assert.equal((await alice.GET('/accounting/jobs', { params: { query: { from: 'soon' } } })).response.status, 400);
        const page = await accountingRecords(alice, { limit: 10 });
        assert.ok(page.records.every((r) => r.Owner === 'alice'));
        assert.equal((await accountingQueue(admin, { groupBy: 'Status' })).interval, 'minute');
        assert.equal((await alice.GET('/accounting/queue', { params: { query: {} } })).response.status, 403);
        const apel = await admin.GET('/accounting/apel', { params: { query: { month: '2026-11' } }, parseAs: 'text' });
        assert.match(String(apel.data), /^APEL-summary-job-message: v0\.3\n/);
      } finally {
        await admin.close();
      }
    });

    // Last but one: once the AUP is set, users who have not accepted it get no new tokens.
    it('joining: a group request approved, one rejected, one withdrawn; the AUP set, read and accepted', async () => {
      const registry = new RegistryAdmin(svc.ctx.db, svc.ctx.registry);
      await registry.createGroup('system', { name: 'client_admin', properties: ['Admin'] });
      await registry.addMember('system', 'client_admin', 'admin');
      const admin = client({ token: await svc.token('admin', 'client_admin') });
      try {
        const asked = unwrap(await alice.POST('/registry/requests', { body: { group: 'dirigo_monitor', message: 'client test' } }));
        assert.equal(asked.status, 'pending');
        assert.ok(unwrap(await admin.GET('/registry/requests', { params: { query: { status: 'pending' } } })).requests.some((r) => r.id === asked.id));
        assert.equal(unwrap(await admin.POST('/registry/requests/{id}/approve', { params: { path: { id: asked.id } }, body: {} })).status, 'approved');
        const again = unwrap(await alice.POST('/registry/requests', { body: { group: 'dirigo_admin' } }));
        assert.equal(unwrap(await admin.POST('/registry/requests/{id}/reject', { params: { path: { id: again.id } }, body: { reason: 'no' } })).status, 'rejected');
        const third = unwrap(await alice.POST('/registry/requests', { body: { group: 'dirigo_admin' } }));
        assert.equal(unwrap(await alice.DELETE('/registry/requests/{id}', { params: { path: { id: third.id } } })).status, 'withdrawn');
        assert.equal((await anonymous.GET('/registry/aup')).response.status, 404);
        assert.equal(unwrap(await admin.PUT('/registry/aup', { body: { version: 'client-1', text: 'Be nice.' } })).version, 'client-1');
        assert.equal(unwrap(await anonymous.GET('/registry/aup')).text, 'Be nice.');
        assert.equal(unwrap(await alice.POST('/registry/aup/accept', { body: { version: 'client-1' } })).user, 'alice');
      } finally {
        await admin.close();
      }
    });

    it('called every operation of the document, each answer documented', () => {
      const all = ROUTES.map((r) => r.op.operationId);
      assert.deepEqual(all.filter((id) => !seen.has(id)), [], 'operations never called');
      assert.deepEqual(undocumented, []);
    });
  });
}
