/**
 * Figure: how soon 1,000 subscribers of GET /jobs/events learn of a status change — target: median < 1 s
 * on the 2-core machine. `dirigo serve` runs as its own process; 1,000 event streams (each its own
 * keep-alive HTTPS connection) follow one user's jobs; a job is killed, and the clock runs from the kill
 * request to each stream's `Killed` event. Several rounds; the medians and the 95th percentile are printed,
 * beside the round trip of one GET /jobs/{jid} (the floor any client pays to learn anything).
 * Usage: node bench/load/job-events.ts [--subscribers N] [--rounds N] [--postgres]
 */
import { parseArgs } from 'node:util';
import { rmSync } from 'node:fs';
import { Agent, request } from 'undici';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { flowAToken, prepareServe, startServe, stopServe, userAgent } from '../../test/helpers/serve-process.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

const { values } = parseArgs({ options: { subscribers: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '5' }, postgres: { type: 'boolean' } }, strict: false });
const subscribers = Number(values.subscribers);
const rounds = Number(values.rounds);

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function run(dialect: Dialect): Promise<void> {
  // Nothing runs: the only changes are the kills.
  const setup = await prepareServe(dialect, { scheduler: { enabled: false }, events: { maxSubscribers: subscribers + 10, maxStreamsPerUser: subscribers + 10 } });
  const server = await startServe(setup);
  const api = userAgent(setup.pki, 'alice', 4);
  const streams = new Agent({ connect: { ca: setup.pki.ca.certPem }, connections: subscribers + 10, bodyTimeout: 0, headersTimeout: 60_000 });
  try {
    const token = await flowAToken(server.url, api);
    const headers = { authorization: `Bearer ${token}` };
    // Each stream resolves the waiter of the job whose Killed event it reads.
    const waiting = new Map<number, Map<number, (t: bigint) => void>>();
    const bodies: { destroy(): void }[] = [];
    let ready = 0;
    process.stdout.write(`opening ${subscribers} event streams...\n`);
    await Promise.all(
      Array.from({ length: subscribers }, async (_, i) => {
        const res = await request(`${server.url}/jobs/events?Status=Killed`, { headers, dispatcher: streams });
        if (res.statusCode !== 200) throw new Error(`events: ${res.statusCode} ${await res.body.text()}`);
        bodies.push(res.body);
        let text = '';
        let live = false;
        res.body.setEncoding('utf8');
        res.body.on('data', (chunk: string) => {
          text += chunk;
          if (!live && text.includes('event: ready')) {
            live = true;
            ready++;
          }
          for (const m of text.matchAll(/"JobID":(\d+),"Status":"Killed"/g)) waiting.get(Number(m[1]))?.get(i)?.(process.hrtime.bigint());
          // Only an unfinished event is kept for the next chunk.
          text = text.slice(text.lastIndexOf('\n\n') + 2);
        });
        res.body.on('error', () => {});
      }),
    );
    while (ready < subscribers) await new Promise((r) => setTimeout(r, 50));
    const latencies: number[] = [];
    const roundTrips: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const sub = await request(`${server.url}/jobs`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ Executable: '/bin/true' }), dispatcher: api });
      const jid = ((await sub.body.json()) as { jids: number[] }).jids[0]!;
      const got = new Map<number, (t: bigint) => void>();
      const arrivals = Array.from({ length: subscribers }, (_, i) => new Promise<bigint>((resolve) => got.set(i, resolve)));
      waiting.set(jid, got);
      const rt0 = process.hrtime.bigint();
      await (await request(`${server.url}/jobs/${jid}`, { headers, dispatcher: api })).body.dump();
      roundTrips.push(Number(process.hrtime.bigint() - rt0) / 1e6);
      const t0 = process.hrtime.bigint();
      const kill = await request(`${server.url}/jobs/${jid}`, { method: 'DELETE', headers, dispatcher: api });
      await kill.body.dump();
      for (const t of await Promise.all(arrivals)) latencies.push(Number(t - t0) / 1e6);
      waiting.delete(jid);
    }
    latencies.sort((a, b) => a - b);
    roundTrips.sort((a, b) => a - b);
    const median = quantile(latencies, 0.5);
    console.log(`job-events (${dialect}, ${subscribers} subscribers, ${rounds} status changes)`);
    console.log(`  kill to event at every subscriber: median ${median.toFixed(0)} ms, p95 ${quantile(latencies, 0.95).toFixed(0)} ms, max ${latencies.at(-1)!.toFixed(0)} ms (target median < 1000 ms) ${median < 1000 ? 'OK' : 'BELOW TARGET'}`);
    console.log(`  one GET /jobs/{jid} round trip meanwhile: median ${quantile(roundTrips, 0.5).toFixed(1)} ms (a poller's floor, before its interval)`);
    for (const b of bodies) b.destroy();
  } finally {
    await streams.destroy();
    await api.close();
    await stopServe(server);
    await setup.dropSchema?.();
    rmSync(setup.dataDir, { recursive: true, force: true });
  }
}

await run('sqlite');
if (values.postgres) {
  const why = await postgresUnavailable();
  if (why) console.log(`job-events (postgres): skipped, ${why}`);
  else await run('postgres');
}
