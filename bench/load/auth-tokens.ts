/**
 * Issue "Foundation" figures:
 *  - flow A token issuance over keep-alive TLS with a client certificate (target >= 2,000 tokens/s);
 *  - authenticated request overhead: GET /oauth2/userinfo with a bearer token as a ratio of an
 *    unauthenticated trivial route (/healthz) of the same server, same run (target >= 0.6).
 * Usage: node bench/load/auth-tokens.ts [--seconds N]
 */
import { parseArgs } from 'node:util';
import { request, Agent } from 'undici';
import { runLoad, report, percentile } from '../lib/load.ts';
import { startBenchServer, cpuSeconds } from '../lib/server.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' } } });
const durationMs = Number(values.seconds) * 1000;
const concurrency = 32;

const server = await startBenchServer();
try {
  const alice = server.user('alice');
  const tls = { ca: server.ca, ...alice };
  const tokenPath = '/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=Dirigo-Local';
  // Warm up JIT and connections.
  await runLoad({ url: server.url, next: () => ({ path: tokenPath }), concurrency, durationMs: 1500, tls });

  const cpu0 = cpuSeconds(server.child.pid!);
  const tokens = await runLoad({ url: server.url, next: () => ({ path: tokenPath }), concurrency, durationMs, tls });
  const cpu = cpuSeconds(server.child.pid!) - cpu0;
  report('flow A token issuance', tokens.perSecond, 'tokens/s', { min: 2000 }, `(p50 ${percentile(tokens.latenciesMs, 50).toFixed(1)} ms, p99 ${percentile(tokens.latenciesMs, 99).toFixed(1)} ms, server CPU ${(cpu / tokens.seconds).toFixed(2)} cores, ${tokens.errors} errors)`);

  const agent = new Agent({ connect: tls });
  const res = await request(server.url + tokenPath, { dispatcher: agent });
  const { access_token: token } = (await res.body.json()) as { access_token: string };
  await agent.close();

  const plainTls = { ca: server.ca };
  const trivial = await runLoad({ url: server.url, next: () => ({ path: '/healthz' }), concurrency, durationMs, tls: plainTls });
  const authed = await runLoad({ url: server.url, next: () => ({ path: '/oauth2/userinfo', headers: { authorization: `Bearer ${token}` } }), concurrency, durationMs, tls: plainTls });
  process.stdout.write(`      /healthz ${trivial.perSecond.toFixed(0)} req/s, /oauth2/userinfo ${authed.perSecond.toFixed(0)} req/s\n`);
  report('authenticated request ratio (userinfo / healthz)', authed.perSecond / trivial.perSecond, '', { min: 0.6 });
} finally {
  await server.stop();
}
