/**
 * `npm run bench -- accounting`: the accounting queries against history (docs/accounting.md "Cost").
 * usage_records grows to each size (generated in SQL: each size's new runs spread over one year, 30 owners in
 * 4 groups, 6 sites, 2 job types, 3 final statuses), the fold builds the rollups, then two queries are
 * timed, interleaved, median of --repeats: a year at hourly resolution grouped by site (everything), the
 * same by day, and one user's own year by site, hourly. A three-dimension query, answered from the records, is timed once per size
 * for contrast. Prints ms per size and the slope k in t ∝ n^k (first to last size).
 * Usage: node bench/scale/accounting.ts [--records 1000000,10000000] [--repeats 15] [--dialect sqlite|postgres|both]
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import type { Db } from '../../src/kernel/db/database.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';
import { foldUsage } from '../../src/accounting/rollup.ts';
import { queryUsage, type UsageQuery } from '../../src/accounting/query.ts';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { freshDatabase } from '../lib/matching.ts';

// Not strict: `npm run bench -- --flag` passes its flags to every bench.
const { values } = parseArgs({ options: { records: { type: 'string' }, repeats: { type: 'string', default: '15' }, dialect: { type: 'string', default: 'both' } }, strict: false });
const SIZES = typeof values.records === 'string' ? values.records.split(',').map(Number) : [1_000_000, 10_000_000];
const REPEATS = Number(values.repeats);
const TARGET_MS = 100;
const YEAR_HOURS = 365 * 24;
const H0 = Math.floor(Date.parse('2025-01-01T00:00:00Z') / 3600_000);

/** Appends records have+1 … to, spread evenly over the year in id order, with their pending rows. */
async function fillRecordsTo(db: Db, dialect: Dialect, have: number, to: number): Promise<void> {
  const chunk = 250_000;
  for (let from = have; from < to; from += chunk) {
    const count = Math.min(chunk, to - from);
    const series = dialect === 'postgres' ? `select generate_series(${from + 1}::bigint, ${from + count}) as i` : `with recursive s(i) as (select ${from + 1} union all select i + 1 from s where i < ${from + count}) select i from s`;
    // The end in seconds since the epoch: each size's new records spread over the whole year, so that every
    // size answers the same rows and only the history behind them grows.
    const end = `(${H0 * 3600} + ((i - ${have}) * ${YEAR_HOURS * 3600 - 1}) / ${to - have})`;
    const iso = (secs: string) => (dialect === 'postgres' ? `to_char(to_timestamp(${secs}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')` : `strftime('%Y-%m-%dT%H:%M:%fZ', ${secs}, 'unixepoch')`);
    const owner = `((i * 7919) % 30)`;
    const wall = `(60 + (i * 104729) % 36000)`;
    const status = `case when i % 10 = 0 then 'Failed' when i % 25 = 1 then 'Killed' else 'Done' end`;
    await sql
      .raw(
        `insert into usage_records (job_id, run, owner, owner_group, site, resource, job_type, start_time, end_time, end_hour, wall_seconds,
           cpu_user_seconds, cpu_system_seconds, max_rss_kb, processors, status, exit_code)
         select i, 1, 'user' || ${owner}, 'group' || (${owner} % 4), 'SITE-' || ((i / 7) % 6), 'partition', case when i % 5 = 0 then 'Production' else 'User' end,
           ${iso(`${end} - ${wall}`)}, ${iso(end)}, ${end} / 3600, ${wall},
           case when i % 25 = 1 then null else ${wall} * 0.83 end, case when i % 25 = 1 then null else ${wall} * 0.04 end, null,
           case when i % 8 = 0 then 8 else 1 end, ${status}, case when i % 10 = 0 then 1 when i % 25 = 1 then null else 0 end
         from (${series}) as t`,
      )
      .execute(db);
    process.stderr.write(`\r  ${from + count} / ${to} records`);
  }
  process.stderr.write('\n');
  await sql`insert into usage_pending (record_id) select id from usage_records where id > ${have}`.execute(db);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

const QUERIES: { name: string; q: UsageQuery }[] = [
  { name: 'a year, hourly, by site', q: { fromHour: H0, toHour: H0 + YEAR_HOURS, interval: 'hour', groupBy: 'site', filters: {} } },
  { name: 'a year, daily, by site', q: { fromHour: H0, toHour: H0 + YEAR_HOURS, interval: 'day', groupBy: 'site', filters: {} } },
  { name: "a user's own year, hourly, by site", q: { fromHour: H0, toHour: H0 + YEAR_HOURS, interval: 'hour', groupBy: 'site', filters: { owner: ['user7'] } } },
];
const FALLBACK: UsageQuery = { fromHour: H0, toHour: H0 + YEAR_HOURS, interval: 'month', groupBy: 'site', filters: { owner: ['user7'], job_type: ['User'] } };

async function run(dialect: Dialect): Promise<void> {
  const bench = await freshDatabase(dialect, 4);
  const { db } = bench;
  const table: { n: number; ms: number[]; rows: number[]; fill: number; fold: number; fallback: number }[] = [];
  try {
    let have = 0;
    for (const n of SIZES) {
      const fill = await timed(() => fillRecordsTo(db, dialect, have, n));
      have = n;
      const fold = await timed(async () => {
        let done = 0;
        for (let k; (k = await foldUsage(db, 100_000)) > 0; ) process.stderr.write(`\r  folded ${(done += k)}`);
        process.stderr.write('\n');
      });
      if (dialect === 'postgres') await sql`vacuum analyze`.execute(db);
      else await sql`analyze`.execute(db);
      const rows = await Promise.all(QUERIES.map(async (x) => (await queryUsage(db, x.q)).length));
      const samples = QUERIES.map(() => [] as number[]);
      for (let r = 0; r < REPEATS + 2; r++) {
        for (const [i, x] of QUERIES.entries()) {
          const ms = await timed(() => queryUsage(db, x.q));
          if (r >= 2) samples[i]!.push(ms);
        }
      }
      const fallback = await timed(() => queryUsage(db, FALLBACK));
      table.push({ n, ms: samples.map(median), rows, fill, fold, fallback });
      console.log(`${dialect} ${n.toLocaleString('en')} records: filled in ${(fill / 1000).toFixed(0)} s, folded in ${(fold / 1000).toFixed(0)} s; ${QUERIES.map((x, i) => `${x.name}: ${samples[i] ? median(samples[i]).toFixed(1) : '?'} ms (${rows[i]} rows)`).join('; ')}; 3 dimensions from the records: ${fallback.toFixed(0)} ms`);
    }
  } finally {
    await bench.close();
  }
  const first = table[0]!;
  const last = table[table.length - 1]!;
  console.log(`\n${dialect}: median of ${REPEATS}, interleaved${'query'.padStart(40)}  ${SIZES.map((n) => `${(n / 1e6).toString()}M`.padStart(9)).join('')}  slope k  target`);
  for (const [i, x] of QUERIES.entries()) {
    const k = table.length > 1 ? Math.log(last.ms[i]! / first.ms[i]!) / Math.log(last.n / first.n) : NaN;
    const ok = last.ms[i]! < TARGET_MS ? 'ok' : 'OVER';
    console.log(`${x.name.padEnd(72)}${table.map((t) => `${t.ms[i]!.toFixed(1)}`.padStart(9)).join('')}  ${k.toFixed(2).padStart(7)}  < ${TARGET_MS} ms ${ok}`);
  }
}

const choice = String(values.dialect);
if (!['sqlite', 'postgres', 'both'].includes(choice)) throw new Error('--dialect: sqlite, postgres or both');
if (choice !== 'postgres') await run('sqlite');
if (choice !== 'sqlite') {
  const why = await postgresUnavailable();
  if (why) console.log(`postgres skipped: ${why}`);
  else await run('postgres');
}
