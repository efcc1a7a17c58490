/**
 * When PostgreSQL goes away, /readyz answers 503 with Retry-After, and comes back with the database. The
 * outage is real: the service reaches PostgreSQL through a TCP relay that the test cuts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { postgresUnavailable, POSTGRES_URL } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { toDirigoError } from '../../src/kernel/error-handler.ts';

class Relay {
  server: net.Server;
  sockets = new Set<net.Socket>();
  port = 0;
  up = true;
  constructor(target: URL) {
    this.server = net.createServer((client) => {
      if (!this.up) return client.destroy();
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => this.sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
  }
  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as net.AddressInfo).port;
  }
  cut(): void {
    this.up = false;
    for (const s of this.sockets) s.destroy();
  }
  restore(): void {
    this.up = true;
  }
}

const reason = await postgresUnavailable();
describe('database outage (postgres)', { skip: reason && process.env.CI !== 'true' ? `PostgreSQL unavailable: ${reason}` : false }, () => {
  let svc: TestService;
  let relay: Relay;
  before(async () => {
    const target = new URL(POSTGRES_URL);
    relay = new Relay(new URL(POSTGRES_URL));
    await relay.listen();
    target.host = `127.0.0.1:${relay.port}`;
    svc = await startTestService({
      dialect: 'postgres', databaseUrl: target.toString(),
      config: { jobs: { scheduler: { pollIntervalMs: 100, leaseMs: 60000 }, sites: [{ name: 'Local', type: 'local', slots: 1 }] } },
    });
  });
  after(async () => {
    relay.restore();
    await svc?.close();
    relay.server.close();
  });

  it('answers 503 with Retry-After while the database is unreachable, and recovers', async () => {
    assert.equal((await svc.request('/readyz')).status, 200);
    relay.cut();
    const down = await svc.request('/readyz');
    assert.equal(down.status, 503);
    assert.equal(down.json.error, 'service_unavailable');
    assert.equal(down.json.status, 'unavailable');
    assert.deepEqual(down.json.checks.database, { ready: false, reason: 'the database does not answer' });
    assert.match(down.json.error_description, /not ready: database \(the database does not answer\)/);
    assert.ok(Number(down.headers['retry-after']) > 0);
    relay.restore();
    let status = 0;
    for (let i = 0; i < 20 && status !== 200; i++) {
      status = (await svc.request('/readyz')).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 200);
  });

  it('a job that ends during the outage is recorded once the database is back (its events are retried)', async () => {
    const token = await svc.token('alice');
    const submitted = await svc.request('/jobs', { method: 'POST', token, json: { Executable: '/bin/sh', Arguments: `-c 'sleep 1; echo done'`, Sites: ['Local'] } });
    assert.equal(submitted.status, 201, submitted.text);
    const jid = submitted.json.jids[0] as number;
    for (let i = 0; (await svc.request(`/jobs/${jid}`, { token })).json.Status !== 'Running'; i++) {
      assert.ok(i < 200, 'the job did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
    relay.cut();
    await new Promise((r) => setTimeout(r, 3000)); // the payload ends while nothing can be written
    relay.restore();
    let job: Record<string, unknown> = {};
    for (let i = 0; i < 300 && !['Done', 'Failed', 'Killed'].includes(String(job.Status)); i++) {
      await new Promise((r) => setTimeout(r, 100));
      const r = await svc.request(`/jobs/${jid}`, { token });
      if (r.status === 200) job = r.json;
    }
    assert.equal(job.Status, 'Done', JSON.stringify(job));
    assert.equal(job.RescheduleCounter, 0);
  });
});

describe('error mapping', () => {
  it('maps driver connection failures to 503, Fastify errors to 4xx and anything else to an opaque 500', () => {
    for (const code of ['ECONNREFUSED', '57P01', '08006']) {
      const e = toDirigoError(Object.assign(new Error('x'), { code }));
      assert.equal(e.status, 503);
      assert.ok(e.headers['retry-after']);
    }
    assert.equal(toDirigoError(new Error('Connection terminated unexpectedly')).status, 503);
    assert.equal(toDirigoError(Object.assign(new Error('big'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 })).status, 413);
    assert.equal(toDirigoError(Object.assign(new Error('type'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 })).status, 415);
    const opaque = toDirigoError(new Error('secret internals: password=hunter2'));
    assert.equal(opaque.status, 500);
    assert.equal(opaque.code, 'server_error');
    assert.doesNotMatch(opaque.message, /hunter2/);
  });
});
