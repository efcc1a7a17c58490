/**
 * Figure: the API process's CPU per 100 MB input sandbox, with the S3 store on moto_server (docs/sandboxes.md):
 *   through the API  multipart POST /jobs carrying the file: the service packs, hashes and stores the bytes;
 *   direct path      the client packs and hashes, POST /sandboxes answers a presigned PUT, the client PUTs
 *                    to the store, POST /jobs names the sandbox (InputSandboxRef): no byte through the API.
 * Rounds alternate (through, direct, through…) so that the machine's load weighs on both alike; the CPU of
 * `dirigo serve` (user + system, /proc) per round; each round's file is fresh random bytes (no dedup).
 * Usage: node bench/load/sandbox-transfer.ts [--rounds N] [--mb N]
 */
import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { request, type Agent } from 'undici';
import { startMoto } from '../../test/helpers/s3-servers.ts';
import { flowAToken, prepareServe, startServe, stopServe, userAgent } from '../../test/helpers/serve-process.ts';
import { cpuSeconds } from '../lib/server.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({ options: { rounds: { type: 'string' }, mb: { type: 'string' } }, strict: false });
const ROUNDS = Number(values.rounds ?? 4);
const MB = Number(values.mb ?? 100);
const SIZE = MB * 1024 * 1024;

/** One file in a tar.gz, as the CLI packs it. */
async function pack(name: string, data: Buffer): Promise<Buffer> {
  const p = tar.pack();
  p.entry({ name, size: data.length, mode: 0o644 }, data);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks), { level: 1 });
}

async function throughApi(url: string, agent: Agent, token: string, data: Buffer): Promise<void> {
  const form = new FormData();
  form.append('manifest', JSON.stringify({ Executable: '/bin/true', InputSandbox: ['data.bin'] }));
  form.append('data.bin', new Blob([data]), 'data.bin');
  const body = new Response(form);
  const res = await request(`${url}/jobs`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': body.headers.get('content-type')! }, body: Buffer.from(await body.arrayBuffer()), dispatcher: agent });
  const text = await res.body.text();
  if (res.statusCode !== 201) throw new Error(`multipart POST /jobs: ${res.statusCode} ${text}`);
}

async function direct(url: string, agent: Agent, token: string, archive: Buffer): Promise<void> {
  const sha256 = createHash('sha256').update(archive).digest('hex');
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const res = await request(`${url}/sandboxes`, { method: 'POST', headers, body: JSON.stringify({ sha256, size: archive.length }), dispatcher: agent });
  const answer = (await res.body.json()) as { exists: boolean; upload?: { url: string; method: string; headers: Record<string, string> } };
  if (res.statusCode !== 201 || !answer.upload) throw new Error(`POST /sandboxes: ${res.statusCode} ${JSON.stringify(answer)}`);
  const put = await request(answer.upload.url, { method: 'PUT', headers: answer.upload.headers, body: archive });
  const putText = await put.body.text();
  if (put.statusCode !== 200) throw new Error(`PUT to the store: ${put.statusCode} ${putText}`);
  const job = await request(`${url}/jobs`, { method: 'POST', headers, body: JSON.stringify({ Executable: '/bin/true', InputSandbox: ['data.bin'], InputSandboxRef: `sha256:${sha256}` }), dispatcher: agent });
  const jobText = await job.body.text();
  if (job.statusCode !== 201) throw new Error(`POST /jobs with InputSandboxRef: ${job.statusCode} ${jobText}`);
}

const moto = await startMoto();
const bucket = { bucket: moto.bucket, endpoint: moto.endpoint, region: moto.region, forcePathStyle: true, accessKeyId: moto.accessKeyId, secretAccessKey: moto.secretAccessKey };
const setup = await prepareServe('sqlite', {
  scheduler: { enabled: false },
  sandbox: { store: 's3', s3: bucket, maxFileSize: 2 * SIZE, maxSandboxSize: 2 * SIZE },
  jsonBodyLimit: 65536,
});
const server = await startServe(setup);
const agent = userAgent(setup.pki, 'alice', 2);
try {
  const token = await flowAToken(server.url, agent);
  const pid = server.child.pid!;
  const cpu = { through: [] as number[], direct: [] as number[] };
  // A warm-up of each (JIT, connections, the bucket).
  await throughApi(server.url, agent, token, randomBytes(1024 * 1024));
  await direct(server.url, agent, token, await pack('data.bin', randomBytes(1024 * 1024)));
  for (let i = 0; i < ROUNDS; i++) {
    const data = randomBytes(SIZE);
    let before = cpuSeconds(pid);
    await throughApi(server.url, agent, token, data);
    cpu.through.push(cpuSeconds(pid) - before);
    // The client's own work (packing, hashing) is not the API's: done before the clock starts.
    const archive = await pack('data.bin', randomBytes(SIZE));
    before = cpuSeconds(pid);
    await direct(server.url, agent, token, archive);
    cpu.direct.push(cpuSeconds(pid) - before);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const per100 = (s: number) => (s * 100) / MB;
  const t = per100(median(cpu.through));
  const d = per100(median(cpu.direct));
  console.log(`sandbox-transfer (S3 store on moto_server, SQLite, ${ROUNDS} interleaved rounds of ${MB} MB)`);
  console.log(`  API CPU per 100 MB, through the API (multipart POST /jobs): ${t.toFixed(3)} s   [rounds: ${cpu.through.map((x) => x.toFixed(2)).join(', ')}]`);
  console.log(`  API CPU per 100 MB, direct path (presigned PUT)          : ${d.toFixed(3)} s   [rounds: ${cpu.direct.map((x) => x.toFixed(2)).join(', ')}]`);
  console.log(`  ratio through / direct: ${(t / Math.max(d, 0.001)).toFixed(1)}x`);
} finally {
  await agent.close();
  await stopServe(server);
  rmSync(setup.dataDir, { recursive: true, force: true });
  await moto.stop();
}
