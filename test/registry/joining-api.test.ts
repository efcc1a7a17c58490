/**
 * Joining through the API (docs/registry.md "Joining", "Webhook"): a member asks for a group, a manager
 * of it approves, a non-manager is refused, Admin rejects, the requester withdraws; every request created
 * and decided reaches a real HTTPS receiver (trusted through registry.webhook.verify) with a valid
 * Dirigo-Signature, and the secret appears in no log line.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { dialects } from '../helpers/dialects.ts';
import { testPki } from '../helpers/pki.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { oauthConfig } from '../helpers/oauth-kit.ts';

const SECRET = 'webhook-secret-for-tests-0123456789';

interface Delivery {
  event: string;
  request: { id: number; status: string; user: string; group: string };
  valid: boolean;
}

/** An HTTPS receiver that checks each delivery's signature; it answers 503 to the first one (a retry follows). */
async function receiver(): Promise<{ url: string; deliveries: Delivery[]; close(): Promise<void> }> {
  const pki = await testPki();
  const deliveries: Delivery[] = [];
  let first = true;
  const server: Server = createServer({ cert: readFileSync(pki.server.cert), key: readFileSync(pki.server.key) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (first) {
        first = false;
        res.writeHead(503).end();
        return;
      }
      const body = Buffer.concat(chunks);
      const expected = Buffer.from(`sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`);
      const given = Buffer.from(String(req.headers['dirigo-signature'] ?? ''));
      const valid = given.length === expected.length && timingSafeEqual(given, expected);
      deliveries.push({ ...(JSON.parse(body.toString()) as Omit<Delivery, 'valid'>), valid });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries, close: () => new Promise((r) => server.close(() => r())) };
}

for (const { dialect, skip } of await dialects()) {
  describe(`joining a group through the API, with the webhook (${dialect})`, { skip }, () => {
    let svc: TestService;
    let hook: Awaited<ReturnType<typeof receiver>>;
    let log = '';
    const tokens: Record<string, string> = {};
    const call = (who: string, method: string, path: string, body?: unknown) => svc.request(path, { method, token: tokens[who]!, ...(body !== undefined ? { json: body } : {}) });

    before(async () => {
      hook = await receiver();
      const pki = await testPki();
      const config = await oauthConfig();
      const registry = config.registry as { groups: { name: string; managers?: string[] }[] };
      registry.groups.push({ name: 'vo_admin', members: ['admin'], properties: ['Admin'] } as never);
      registry.groups.find((g) => g.name === 'dirigo_prod')!.managers = ['carol'];
      config.registry = { ...registry, webhook: { url: hook.url, secret: SECRET, verify: pki.caFile } };
      const logStream = new Writable({
        write(chunk, _enc, done) {
          log += String(chunk);
          done();
        },
      });
      svc = await startTestService({ dialect, config, logLevel: 'info', logStream });
      for (const [user, group] of [['bob', 'dirigo_user'], ['alice', 'dirigo_user'], ['carol', 'dirigo_user'], ['admin', 'vo_admin']] as const) tokens[user] = await svc.token(user, group);
    });
    after(async () => {
      await svc?.close();
      await hook?.close();
    });

    it('a member asks, a non-manager may not decide, the manager approves: the membership exists at once', async () => {
      const asked = await call('bob', 'POST', '/registry/requests', { group: 'dirigo_prod', message: 'I run production' });
      assert.equal(asked.status, 201, asked.text);
      assert.deepEqual([asked.json.kind, asked.json.user, asked.json.group, asked.json.status, asked.json.message], ['group', 'bob', 'dirigo_prod', 'pending', 'I run production']);
      const id = asked.json.id as number;
      assert.equal((await call('bob', 'POST', '/registry/requests', { group: 'dirigo_prod' })).status, 409);
      assert.equal((await call('bob', 'POST', '/registry/requests', { group: 'dirigo_user' })).json.error, 'conflict');
      assert.equal((await call('bob', 'POST', '/registry/requests', { group: 'no_such' })).status, 404);
      assert.equal((await call('bob', 'POST', '/registry/requests', { group: 'bad name' })).status, 400);

      const own = await call('bob', 'GET', '/registry/requests');
      assert.deepEqual(own.json.requests.map((r: { id: number }) => r.id), [id]);
      const others = await call('alice', 'GET', '/registry/requests');
      assert.equal(others.json.total, 0);
      const refused = await call('alice', 'POST', `/registry/requests/${id}/approve`, {});
      assert.deepEqual([refused.status, refused.json.error], [403, 'insufficient_privileges']);
      assert.equal((await call('bob', 'POST', `/registry/requests/${id}/approve`, {})).status, 403);

      const queue = await call('carol', 'GET', '/registry/requests?status=pending&group=dirigo_prod');
      assert.deepEqual(queue.json.requests.map((r: { id: number }) => r.id), [id]);
      const approved = await call('carol', 'POST', `/registry/requests/${id}/approve`, {});
      assert.equal(approved.status, 200, approved.text);
      assert.deepEqual([approved.json.status, approved.json.decidedBy], ['approved', 'user:carol']);
      assert.ok(svc.ctx.registry.isMember('bob', 'dirigo_prod'));
      assert.ok(await svc.token('bob', 'dirigo_prod'));
      assert.equal((await call('carol', 'POST', `/registry/requests/${id}/reject`, {})).status, 409);

      const audit = await call('admin', 'GET', `/registry/audit?target=${id}`);
      assert.deepEqual(audit.json.entries.map((e: { action: string }) => e.action), ['request.approve', 'request.create']);
      const membership = await call('admin', 'GET', '/registry/audit?target=dirigo_prod/bob');
      assert.equal(membership.json.entries[0].action, 'membership.add');
      assert.equal(membership.json.entries[0].actor, 'user:carol');
    });

    it('Admin rejects with a reason; the requester withdraws their own request only', async () => {
      const a = await call('alice', 'POST', '/registry/requests', { group: 'dirigo_monitor' });
      const rejected = await call('admin', 'POST', `/registry/requests/${a.json.id}/reject`, { reason: 'monitoring is staff only' });
      assert.deepEqual([rejected.status, rejected.json.status, rejected.json.reason], [200, 'rejected', 'monitoring is staff only']);
      assert.equal(svc.ctx.registry.isMember('alice', 'dirigo_monitor'), false);
      const b = await call('alice', 'POST', '/registry/requests', { group: 'dirigo_monitor' });
      assert.equal((await call('bob', 'DELETE', `/registry/requests/${b.json.id}`)).status, 404);
      const withdrawn = await call('alice', 'DELETE', `/registry/requests/${b.json.id}`);
      assert.deepEqual([withdrawn.status, withdrawn.json.status], [200, 'withdrawn']);
      const all = await call('admin', 'GET', '/registry/requests?status=withdrawn');
      assert.deepEqual(all.json.requests.map((r: { id: number }) => r.id), [b.json.id]);
    });

    it('the webhook got every request created and decided, signed, after a retry; the secret is in no log line', async () => {
      await svc.ctx.joining.webhook!.settled();
      const events = hook.deliveries.map((d) => `${d.event}:${d.request.status}`);
      assert.ok(hook.deliveries.every((d) => d.valid), JSON.stringify(hook.deliveries));
      // The first delivery was refused once (503) and retried.
      for (const e of ['request.created:pending', 'request.decided:approved', 'request.decided:rejected']) assert.ok(events.includes(e), `${e} in ${events.join(' ')}`);
      assert.ok(!log.includes(SECRET));
      assert.match(log, /registry webhook delivered/);
    });
  });
}
