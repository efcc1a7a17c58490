/** Shared pieces of the jobs suites: job services with a fast scheduler, submission and waiting helpers. */
import assert from 'node:assert/strict';
import { createGunzip } from 'node:zlib';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { startTestService, type HttpResponse, type TestService, type TestServiceOptions } from '../helpers/service.ts';
import type { TestDialect } from '../helpers/dialects.ts';

export const FINAL = ['Done', 'Failed', 'Killed'];

/** @param service more options of the test service (its sandbox store...) */
export function startJobsService(dialect: TestDialect, jobs: Record<string, unknown> = {}, service: Partial<TestServiceOptions> = {}): Promise<TestService> {
  return startTestService({
    ...service,
    dialect,
    config: {
      jobs: {
        scheduler: { pollIntervalMs: 50, killGraceMs: 1000, cpuCheckIntervalMs: 100, leaseMs: 5000, ...(jobs.scheduler as object) },
        sites: [{ name: 'Local', type: 'local', slots: 4 }],
        ...Object.fromEntries(Object.entries(jobs).filter(([k]) => k !== 'scheduler')),
      },
    },
  });
}

/** The listing tests' jobs: alice's twelve (JobGroup g0 or g1, Priority 0–3; the first two killed), bob's two. */
export interface ListingFixture {
  svc: TestService;
  alice: string;
  bob: string;
  admin: string;
  aliceIds: number[];
  bobIds: number[];
}

/** A jobs service (scheduler off: nothing runs, statuses move only by requests) holding the listing fixture. */
export async function startListingFixture(dialect: TestDialect): Promise<ListingFixture> {
  const svc = await startJobsService(dialect, { scheduler: { enabled: false } });
  const alice = await svc.token('alice');
  const bob = await svc.token('bob');
  const admin = await svc.token('admin', 'dirigo_admin');
  const a = await svc.request('/jobs', {
    method: 'POST',
    token: alice,
    json: Array.from({ length: 12 }, (_, i) => ({ Executable: '/bin/true', JobName: `a${i}`, JobGroup: i % 3 === 0 ? 'g0' : 'g1', Priority: i % 4 })),
  });
  assert.equal(a.status, 201, a.text);
  const b = await svc.request('/jobs', { method: 'POST', token: bob, json: [{ Executable: '/bin/true', JobName: 'b0' }, { Executable: '/bin/true', JobName: 'b1' }] });
  assert.equal(b.status, 201, b.text);
  const aliceIds = a.json.jids as number[];
  // Kill two of alice's so that Status restrictions have something to tell apart.
  for (const jid of aliceIds.slice(0, 2)) assert.equal((await svc.request(`/jobs/${jid}`, { method: 'DELETE', token: alice })).status, 200);
  return { svc, alice, bob, admin, aliceIds, bobIds: b.json.jids as number[] };
}

export async function submit(svc: TestService, token: string, manifest: unknown): Promise<number> {
  const res = await svc.request('/jobs', { method: 'POST', token, json: manifest });
  assert.equal(res.status, 201, res.text);
  return res.json.jids[0] as number;
}

/** A multipart body built by the platform's FormData encoder. */
export async function multipart(parts: Array<{ name: string; value: string | Buffer; filename?: string; type?: string }>): Promise<{ body: Buffer; headers: Record<string, string> }> {
  const form = new FormData();
  for (const p of parts) {
    if (p.filename !== undefined) form.append(p.name, new Blob([p.value], { type: p.type ?? 'application/octet-stream' }), p.filename);
    else form.append(p.name, typeof p.value === 'string' ? p.value : p.value.toString('utf8'));
  }
  const req = new Request('https://localhost/', { method: 'POST', body: form });
  return { body: Buffer.from(await req.arrayBuffer()), headers: { 'content-type': req.headers.get('content-type')! } };
}

export async function postMultipart(svc: TestService, token: string, parts: Parameters<typeof multipart>[0]): Promise<HttpResponse> {
  const { body, headers } = await multipart(parts);
  return svc.request('/jobs', { method: 'POST', token, body, headers });
}

export async function waitForStatus(svc: TestService, token: string, jid: number, statuses: string[] = FINAL, timeoutMs = 20000): Promise<Record<string, unknown>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const res = await svc.request(`/jobs/${jid}`, { token });
    assert.equal(res.status, 200, res.text);
    if (statuses.includes(res.json.Status)) return res.json;
    if (Date.now() > end) assert.fail(`job ${jid} is still ${res.json.Status} (${res.json.MinorStatus}) after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** name → content of every file in a tar.gz. */
export async function untar(data: Buffer): Promise<Map<string, Buffer>> {
  const extract = tar.extract();
  const out = new Map<string, Buffer>();
  Readable.from([data]).pipe(createGunzip()).pipe(extract);
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const c of entry) chunks.push(c as Buffer);
    out.set(entry.header.name, Buffer.concat(chunks));
  }
  return out;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
