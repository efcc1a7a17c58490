/**
 * `npm run bench -- matching`: matching speed as the Waiting jobs grow (issue 34). For each size, a fresh
 * database holds that many Waiting jobs in task queues (3 groups with shares 3:1:1, 4 users each, every
 * user with the same requirement mix: processors 1–16, memory, GPUs, tags, platforms, CPU time); 32
 * claimers with varied offers call Matcher.claim for small batches at once, in process (no HTTP). Printed:
 * jobs matched per second, latency per claim (p50, p99), the slope of the cost per job from the smallest
 * to the largest size, each group's share of the processors matched against its target (goal ±5 %), and
 * the goal line: ≥ 1,000 jobs/s on PostgreSQL at 1,000,000 Waiting jobs. Every match is checked against
 * its offer (a requirement unmet, more than a consumable offer has, a job matched twice). Also timed: what
 * GET /jobs/shares and GET /jobs/{jid}/matching compute at each size ("shares ms", "why ms").
 *
 * Defaults: 10,000 / 100,000 / 1,000,000 jobs on both databases (seeding a million takes 30–70 s here).
 * Quick: `--sizes 10000` (under a minute). Sizes also from DIRIGO_BENCH_MATCHING_SIZES.
 * Usage: node bench/scale/matching.ts [--sizes 10000,100000] [--dialect sqlite|postgres|both] [--queues 1200]
 *        [--claimers 32] [--batch 4] [--matches 10000] [--seconds 60]
 */
import { parseArgs } from 'node:util';
import type { Dialect } from '../../src/kernel/db/dialect.ts';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { freshDatabase, runClaimers, seed, shareErrors, timeExplanations, type ClaimRun } from '../lib/matching.ts';

type Size = { size: number; run: ClaimRun; sharesMs: number; whyMs: number };

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({
  options: {
    sizes: { type: 'string' },
    dialect: { type: 'string', default: 'both' },
    queues: { type: 'string', default: '1200' },
    claimers: { type: 'string', default: '32' },
    batch: { type: 'string', default: '4' },
    matches: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '60' },
  },
  strict: false,
});
const sizesText = typeof values.sizes === 'string' ? values.sizes : process.env.DIRIGO_BENCH_MATCHING_SIZES;
const SIZES = (sizesText ? sizesText.split(',').map(Number) : [10_000, 100_000, 1_000_000]).sort((a, b) => a - b);
const QUEUES = Number(values.queues);
const CLAIMERS = Number(values.claimers);
const BATCH = Number(values.batch);
const MATCHES = Number(values.matches);
const SECONDS = Number(values.seconds);
const dialectChoice = String(values.dialect);
if (!['sqlite', 'postgres', 'both'].includes(dialectChoice)) throw new Error('--dialect: sqlite, postgres or both');
if (SIZES.some((n) => !Number.isInteger(n) || n < 1) || [QUEUES, CLAIMERS, BATCH, MATCHES, SECONDS].some((n) => !(n > 0))) throw new Error('sizes and counts must be positive');

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const n = (x: number) => Math.round(x).toLocaleString('en');

async function one(dialect: Dialect, size: number): Promise<Size> {
  const say = (line: string) => process.stderr.write(`  [${dialect} ${n(size)}] ${line}\n`);
  const b = await freshDatabase(dialect, CLAIMERS + 2);
  try {
    const t0 = Date.now();
    await seed(b, size, QUEUES, say);
    say(`ready in ${((Date.now() - t0) / 1000).toFixed(0)} s (${n(QUEUES)} task queues)`);
    const { sharesMs, whyMs } = await timeExplanations(b);
    // Never more than half the jobs: the rate is measured with the queues still full.
    const run = await runClaimers(b, { claimers: CLAIMERS, batch: BATCH, matches: Math.min(MATCHES, Math.floor(size / 2)), seconds: SECONDS, progress: say });
    say(`matched ${n(run.matched)} in ${run.seconds.toFixed(1)} s`);
    return { size, run, sharesMs, whyMs };
  } finally {
    await b.close();
  }
}

function report(dialect: Dialect, runs: Size[]): void {
  console.log(`\nmatching (${dialect}; ${CLAIMERS} claimers of ${BATCH} jobs at most, ${n(QUEUES)} task queues, Matcher.claim in process)`);
  console.log(`${'Waiting jobs'.padStart(14)}${'matched'.padStart(10)}${'jobs/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'µs/job'.padStart(10)}${'shares ms'.padStart(11)}${'why ms'.padStart(9)}  checks`);
  for (const { size, run, sharesMs, whyMs } of runs) {
    const checks = run.violations || run.doubles ? `${run.violations} matches break their offer, ${run.doubles} matched twice` : 'every match fits its offer';
    const cost = run.matched ? ((run.seconds * 1e6) / run.matched).toFixed(0) : '-';
    console.log(`${n(size).padStart(14)}${n(run.matched).padStart(10)}${n(run.perSecond).padStart(10)}${run.p50Ms.toFixed(2).padStart(10)}${run.p99Ms.toFixed(2).padStart(10)}${cost.padStart(10)}${sharesMs.toFixed(1).padStart(11)}${whyMs.toFixed(1).padStart(9)}  ${checks}`);
  }
  const first = runs[0]!;
  const last = runs.at(-1)!;
  if (runs.length > 1 && first.run.perSecond > 0 && last.run.perSecond > 0) {
    const ratio = first.run.perSecond / last.run.perSecond;
    const k = Math.log(ratio) / Math.log(last.size / first.size);
    console.log(`cost per job at ${n(last.size)} vs ${n(first.size)}: × ${ratio.toFixed(2)} (slope k = ${k.toFixed(2)} in cost ∝ n^k; 0 is flat)`);
  }
  const errors = shareErrors(last.run);
  const worst = Math.abs(errors[0]?.error ?? 0);
  console.log(
    `fair share over ${n(last.run.matched)} matches at ${n(last.size)} (processors): ${errors.map((e) => `${e.group} ${pct(e.actual)} vs ${pct(e.target)}`).join(', ')}; ` +
      `worst ${pct(worst)} off target: ${last.run.matched < 10_000 ? 'fewer than 10,000 matches, ' : ''}${worst <= 0.05 ? 'within' : 'OUTSIDE'} ±5 %`,
  );
  if (dialect === 'postgres') {
    const at1M = runs.find((r) => r.size === 1_000_000);
    console.log(at1M ? `goal ≥ 1,000 jobs/s on PostgreSQL at 1,000,000 Waiting jobs: ${n(at1M.run.perSecond)}/s ${at1M.run.perSecond >= 1000 ? 'OK' : 'BELOW'}` : `goal ≥ 1,000 jobs/s on PostgreSQL at 1,000,000 Waiting jobs: not measured (sizes ${SIZES.join(', ')})`);
  }
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  if (dialectChoice !== 'both' && dialectChoice !== dialect) continue;
  if (dialect === 'postgres') {
    const why = await postgresUnavailable();
    if (why) {
      console.log(`matching (postgres): skipped, ${why}`);
      continue;
    }
  }
  const runs: Size[] = [];
  for (const size of SIZES) runs.push(await one(dialect, size));
  report(dialect, runs);
}
