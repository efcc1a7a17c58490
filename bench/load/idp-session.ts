/**
 * Issue "Identity-provider client" figure: `session.get` through @dirigo/idp-client against a bare
 * undici request to the same local HTTPS server, same run, same keep-alive TLS and CA (target: ratio
 * <= 1.15). The session is an OAuth2Session with a bearer token (the bare request sends the same
 * headers), so the ratio covers settings merging, cookies, token attachment, redirects check and hooks.
 * Time is this process's CPU time (client and server both run here), so other processes on a shared
 * machine do not skew it; wall time is printed beside it. Each round alternates batches of 100 between
 * the two; the median round counts.
 * Usage: node bench/load/idp-session.ts [--requests N] [--rounds N]
 */
import { createServer } from 'node:https';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { OAuth2Session, DEFAULT_USER_AGENT } from '@dirigo/idp-client';
import { createCa, issueCertificate } from '../../src/pki/dev-ca.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '7' }, concurrency: { type: 'string', default: '1' } } });
const perRound = Number(values.requests);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);

const dir = mkdtempSync(join(tmpdir(), 'idp-bench-'));
const ca = await createCa('/O=Dirigo/CN=idp bench CA');
const leaf = await issueCertificate(ca, { dn: '/O=Dirigo/CN=localhost', kind: 'server', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
const caFile = join(dir, 'ca.pem');
writeFileSync(caFile, ca.certPem);
const body = JSON.stringify({ sub: 'alice', groups: ['/dirigo'] });
const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/userinfo`;

const agent = new Agent({ connect: { ca: ca.certPem } });
// The bare request puts the same headers on the wire as the session does, so the ratio is the library's cost.
const headers = { 'user-agent': DEFAULT_USER_AGENT, 'accept-encoding': 'gzip, deflate', accept: 'application/json', authorization: 'Bearer bench-token' };
async function bare(): Promise<void> {
  const r = await request(url, { dispatcher: agent, headers });
  await r.body.json();
}
const session = new OAuth2Session({ verify: caFile, trust_env: false, token: { access_token: 'bench-token', token_type: 'Bearer' } });
async function viaSession(): Promise<void> {
  const r = await session.get(url, { headers: { Accept: 'application/json' } });
  r.json();
}

/** CPU time of this process (ms): client and server share it, and other processes' load does not count. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

let wallBare = 0;
let wallSession = 0;
/** CPU time of `n` requests (ms), `concurrency` at a time; wall time is kept aside for the report. */
async function timed(fn: () => Promise<void>, n: number): Promise<number> {
  const start = cpuMs();
  const wallStart = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < n) await fn();
  }));
  const wall = performance.now() - wallStart;
  if (fn === bare) wallBare += wall; else wallSession += wall;
  return cpuMs() - start;
}

try {
  await timed(bare, 500);
  await timed(viaSession, 500);
  wallBare = 0;
  wallSession = 0;
  // Small alternating batches: CPU contention from other processes hits both sides alike.
  const batch = 100;
  const bareTimes: number[] = [];
  const sessionTimes: number[] = [];
  for (let i = 0; i < rounds; i++) {
    let tb = 0;
    let ts = 0;
    for (let done = 0; done < perRound; done += batch) {
      tb += await timed(bare, batch);
      ts += await timed(viaSession, batch);
    }
    bareTimes.push(tb / perRound);
    sessionTimes.push(ts / perRound);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const b = median(bareTimes);
  const s = median(sessionTimes);
  const ratios = bareTimes.map((x, i) => (sessionTimes[i] as number) / x);
  const ratio = median(ratios);
  process.stdout.write(`      CPU per request: bare undici ${(b * 1000).toFixed(0)} µs, session.get ${(s * 1000).toFixed(0)} µs (client and in-process server); wall-time ratio ${(wallSession / wallBare).toFixed(3)}; ${rounds} rounds × ${perRound} requests, concurrency ${concurrency}\n`);
  const ok = ratio <= 1.15;
  process.stdout.write(`${ok ? 'PASS' : 'MISS'}  idp-client session.get / bare undici request time (CPU): ${ratio.toFixed(3)} (target <= 1.15)  (per-round ratios ${ratios.map((r) => r.toFixed(2)).join(' ')})\n`);
} finally {
  await session.close();
  await agent.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
}
