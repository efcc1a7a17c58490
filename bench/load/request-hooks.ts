/**
 * What each per-request step of Dirigo's request path costs, in server CPU per call, beside what a whole
 * `GET /healthz` costs `dirigo serve` in the same run (issue 40: "histogram and request id at a cost you
 * measure per hook"). Each step is the server's own function, called on a real request and reply that a
 * Fastify with Dirigo's logging options answered (captured in its handler), many times in a loop; rounds
 * alternate the steps, and each figure is the median of its rounds. The former forms (prom-client's
 * labelled histogram child, pino's object line) run beside the current ones, so that their difference is
 * measured in the same run.
 *
 *   node bench/load/request-hooks.ts [--rounds N (7)] [--calls N per round (100,000)] [--seconds S of load (4)]
 */
import { parseArgs } from 'node:util';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { openSync } from 'node:fs';
import type pino from 'pino';
import { Histogram, Registry } from 'prom-client';
import { AccessLog, loggingOptions, requestIdFrom } from '../../src/kernel/logging.ts';
import { BufferedOutput } from '../../src/kernel/log-output.ts';
import { RequestLogger } from '../../src/kernel/request-logger.ts';
import { CrossOrigin } from '../../src/app/cors.ts';
import { stampResponse } from '../../src/app/response-stamp.ts';
import { RequestDurations } from '../../src/app/request-durations.ts';
import { refuseUnsafeInput } from '../../src/app/input-checks.ts';
import { runLoad } from '../lib/load.ts';
import { cpuSeconds, startBenchServer } from '../lib/server.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({ options: { rounds: { type: 'string' }, calls: { type: 'string' }, seconds: { type: 'string' } }, strict: false });
const rounds = Number(values.rounds ?? 7);
const calls = Number(values.calls ?? 100_000);
const seconds = Number(values.seconds ?? 4);

// The log goes through the buffer standard output has in production, but to /dev/null.
const sink = new BufferedOutput(openSync('/dev/null', 'w'));
const app = Fastify(loggingOptions('info', sink));
let captured: { request: FastifyRequest; reply: FastifyReply } | undefined;
app.get('/healthz', (request, reply) => {
  captured = { request, reply };
  return { status: 'ok' };
});
await app.ready();
await app.inject({ url: '/healthz?verbose=true', headers: { 'user-agent': 'bench' } });
const { request, reply } = captured!;
const withOrigin = Object.create(request, { headers: { value: { ...request.headers, origin: 'https://app.example' } } }) as FastifyRequest;

const noop = () => {};
const cors = new CrossOrigin({ origins: ['https://app.example'], credentials: true, maxAge: 600 });
const stamp = stampResponse(cors);
const durations = new RequestDurations(new Registry());
const histogram = new Histogram({ name: 'bench_duration_seconds', help: 'x', labelNames: ['method', 'route', 'status'], buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10], registers: [] });
const child = histogram.labels('GET', '/healthz', '200');
const accessLog = new AccessLog({ requestIdLogLabel: 'requestId' });
const root = app.log as pino.Logger;
const bound = { this: app };
const pinoChild = root.child({ requestId: 'a7a3a8e2-3cde-4b61-9d4a-3c1b8fcb1f7e' });

const steps: Array<[string, () => void]> = [
  ['request id (a random UUID, no X-Request-Id given)', () => requestIdFrom(undefined)],
  ["the request's logger: a RequestLogger (now)", () => new RequestLogger(root, 'a7a3a8e2-3cde-4b61-9d4a-3c1b8fcb1f7e')],
  ["the request's logger: a pino child (before)", () => root.child({ requestId: 'a7a3a8e2-3cde-4b61-9d4a-3c1b8fcb1f7e' })],
  ['response stamp: API version, request id, Vary (no Origin)', () => stamp.call(bound.this, request, reply, noop)],
  ['response stamp with an allowed Origin (CORS headers)', () => stamp.call(bound.this, withOrigin, reply, noop)],
  ['input checks (NUL and loose integers; preValidation)', () => refuseUnsafeInput.call(bound.this, request, reply, noop)],
  ['duration histogram: RequestDurations.observe (now)', () => durations.observe('GET', '/healthz', 200, 0.0004)],
  ["duration histogram: prom-client's labelled child (before)", () => child.observe(0.0004)],
  ['access line: written as text (now)', () => accessLog.requestCompleted(null, request, reply)],
  ["access line: pino's object line (before)", () => pinoChild.info({ method: 'GET', route: '/healthz', url: '/healthz?verbose=true', status: 200, ms: 0.4, principal: undefined }, 'request')],
];

const perStep = new Map<string, number[]>(steps.map(([name]) => [name, []]));
for (let r = 0; r < rounds; r++) {
  for (const [name, step] of steps) {
    const t0 = process.cpuUsage();
    for (let i = 0; i < calls; i++) step();
    const used = process.cpuUsage(t0);
    perStep.get(name)!.push(((used.user + used.system) * 1000) / calls);
  }
}
await app.close();
sink.flushSync();

// A whole request in the real server, for scale: server CPU per GET /healthz under 32 keep-alive clients.
const server = await startBenchServer();
let wholeNs: number;
try {
  const load = { url: server.url, next: () => ({ path: '/healthz' }), concurrency: 32, tls: { ca: server.ca } };
  await runLoad({ ...load, durationMs: 2000 });
  const c0 = cpuSeconds(server.child.pid!);
  const result = await runLoad({ ...load, durationMs: seconds * 1000 });
  wholeNs = ((cpuSeconds(server.child.pid!) - c0) * 1e9) / result.requests;
} finally {
  await server.stop();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
process.stdout.write(`request hooks: ${rounds} interleaved rounds of ${calls.toLocaleString('en')} calls each; CPU per call (median), and its share of a whole request\n`);
process.stdout.write(`  a whole GET /healthz in dirigo serve (server CPU per request, ${seconds} s of 32 keep-alive clients): ${(wholeNs / 1000).toFixed(1)} µs\n`);
for (const [name, ns] of perStep) {
  const m = median(ns);
  process.stdout.write(`  ${name.padEnd(64)} ${(m / 1000).toFixed(2).padStart(6)} µs  ${((100 * m) / wholeNs).toFixed(1).padStart(5)} %\n`);
}
