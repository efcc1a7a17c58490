/**
 * A generated catalogue for the benches (bench/load/catalogue-query.ts, bench/scale/scaling.ts), with bulk SQL, not
 * HTTP: /cat/c<k>/r<n>/s<m> (campaign → run → stream leaves, 5 directory fields) plus /cat/big holding
 * BIG files; files with 3 file fields spread over the leaves; then the per-directory summaries of file
 * values, the set of file values and the counters, as the store would have written them.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/kernel/db/schema.ts';

export const BIG = 10_000;

/** The fields the generated catalogue uses: name, type, scope. */
export const FIELDS = [
  ['Campaign', 'string', 'directory'],
  ['Run', 'int', 'directory'],
  ['Energy', 'float', 'directory'],
  ['Stream', 'string', 'directory'],
  ['Taken', 'date', 'directory'],
  ['Quality', 'string', 'file'],
  ['Events', 'int', 'file'],
  ['Version', 'int', 'file'],
] as const;

export const CAMPAIGNS = 10;
export const STREAMS = ['physics', 'calib', 'express', 'minbias', 'cosmics'];

/** Deterministic pseudo-random numbers, so both dialects see the same catalogue and queries. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export interface Fields {
  [name: string]: number;
}

/** Builds /cat/c<k>/r<n>/s<m> (campaign → run → stream leaves) plus /cat/big holding BIG files. */
export async function generateCatalogue(db: Kysely<Database>, dialect: string, f: Fields, DIRS: number, FILES: number): Promise<{ runsPerCampaign: number; seconds: number }> {
  const started = Date.now();
  const now = new Date().toISOString();
  const leavesWanted = Math.max(1, DIRS - 2 - CAMPAIGNS);
  const runsPerCampaign = Math.max(1, Math.round(Math.sqrt(leavesWanted / CAMPAIGNS)));
  const leavesPerRun = Math.max(1, Math.floor((leavesWanted - CAMPAIGNS * runsPerCampaign) / (CAMPAIGNS * runsPerCampaign)));
  const random = rng(42);
  type Dir = { path: string; parent: string; depth: number; own: [number, number | null, string | null][]; id?: number };
  const dirs: Dir[] = [{ path: '/cat', parent: '/', depth: 1, own: [] }, { path: '/cat/big', parent: '/cat', depth: 2, own: [] }];
  const runs: Dir[] = [];
  const leaves: Dir[] = [];
  for (let c = 0; c < CAMPAIGNS; c++) {
    const cp = `/cat/c${c}`;
    dirs.push({ path: cp, parent: '/cat', depth: 2, own: [[f.Campaign!, null, `campaign${c}`]] });
    for (let r = 0; r < runsPerCampaign; r++) {
      const run = c * runsPerCampaign + r;
      const rp = `${cp}/r${run}`;
      runs.push({ path: rp, parent: cp, depth: 3, own: [[f.Run!, run, null], [f.Energy!, [6.5, 7, 13, 13.6][run % 4]!, null]] });
      for (let s = 0; s < leavesPerRun; s++) {
        const day = Math.floor(random() * 365);
        leaves.push({ path: `${rp}/s${s}`, parent: rp, depth: 4, own: [[f.Stream!, null, STREAMS[s % STREAMS.length]!], [f.Taken!, Date.UTC(2026, 0, 1) + day * 86_400_000, null]] });
      }
    }
  }
  // Not push(...): half a million arguments overflow the stack at 5,000,000 files.
  for (const d of runs) dirs.push(d);
  for (const d of leaves) dirs.push(d);
  const byPath = new Map<string, Dir>(dirs.map((d) => [d.path, d]));
  // Each directory's effective document: its own values and those of its ancestors.
  const documentOf = (d: Dir): string => {
    const doc: Record<string, number | string> = {};
    for (let p: Dir | undefined = d; p; p = byPath.get(p.parent)) for (const [field, num, str] of p.own) doc[field] = str ?? num!;
    return JSON.stringify(doc);
  };
  const root = await db.selectFrom('cat_directories').select('id').where('path', '=', '/').executeTakeFirstOrThrow();
  const ids = new Map<string, number>([['/', Number(root.id)]]);
  const chunk = 1000;
  for (let i = 0; i < dirs.length; i += chunk) {
    const part = dirs.slice(i, i + chunk);
    const rows = await db
      .insertInto('cat_directories')
      .values(part.map((d) => ({ parent_id: ids.get(d.parent)!, path: d.path, name: d.path.slice(d.path.lastIndexOf('/') + 1), depth: d.depth, owner: 'admin', owner_group: 'dirigo_admin', mode: 0o755, created_at: now, modified_at: now, files: 0, size: 0, tree_files: 0, tree_size: 0, eff: documentOf(d) })))
      .returning(['id', 'path'])
      .execute();
    for (const r of rows) ids.set(r.path, Number(r.id));
    // Parents are inserted before children, in order, so ids of a chunk's parents are known.
  }
  const own: Database['cat_dir_meta'][] = [];
  const eff: Database['cat_dir_meta_eff'][] = [];
  for (const d of dirs) {
    d.id = ids.get(d.path)!;
    for (const [field, num, str] of d.own) own.push({ dir_id: d.id, field_id: field, num, str });
    for (let p: Dir | undefined = d; p; p = byPath.get(p.parent)) {
      for (const [field, num, str] of p.own) eff.push({ dir_id: d.id, field_id: field, num, str, source_id: ids.get(p.path)! });
    }
  }
  for (let i = 0; i < own.length; i += chunk) await db.insertInto('cat_dir_meta').values(own.slice(i, i + chunk)).execute();
  for (let i = 0; i < eff.length; i += chunk) await db.insertInto('cat_dir_meta_eff').values(eff.slice(i, i + chunk)).execute();
  process.stderr.write(`  ${dirs.length + 1} directories, ${eff.length} effective metadata rows\n`);

  // Files: BIG in /cat/big, the rest spread over the leaves (whose ids are consecutive).
  const firstLeaf = ids.get(leaves[0]!.path)!;
  const lastLeaf = ids.get(leaves[leaves.length - 1]!.path)!;
  if (lastLeaf - firstLeaf + 1 !== leaves.length) throw new Error('leaf ids are not consecutive');
  const bigId = ids.get('/cat/big')!;
  const seriesOf = (from: number, to: number) =>
    dialect === 'postgres' ? `select generate_series(${from}, ${to}) as i` : `with recursive s(i) as (select ${from} union all select i + 1 from s where i < ${to}) select i from s`;
  const fileChunk = 100_000;
  for (let from = 0; from < FILES; from += fileChunk) {
    const to = Math.min(FILES, from + fileChunk) - 1;
    await sql
      .raw(
        `insert into cat_files (dir_id, name, size, checksum, checksum_type, guid, owner, owner_group, mode, status, created_at, modified_at, meta)
         select case when i < ${BIG} then ${bigId} else ${firstLeaf} + (i % ${leaves.length}) end, 'f' || i, 1000 + (cast(i as bigint) * 7919) % 1000000, 'ad1e' || i, 'Adler32', 'guid-' || i,
                'admin', 'dirigo_admin', 420, 'AprioriGood', '${now}', '${now}',
                '{"${f.Quality}":"' || case i % 3 when 0 then 'good' when 1 then 'bad' else 'unknown' end || '","${f.Events}":' || ((i * 7) % 10000) || ',"${f.Version}":' || (1 + i % 5) || '}'
         from (${seriesOf(from, to)}) as t`,
      )
      .execute(db);
    process.stderr.write(`\r  ${to + 1} / ${FILES} files`);
  }
  process.stderr.write('\n');
  // Each directory's file values with their counts (numbers as their decimal text, as the store writes them).
  const valueCounts =
    dialect === 'postgres'
      ? `select f.dir_id, k.key::bigint as field_id, k.value as v, count(*) as n from cat_files f cross join json_each_text(f.meta::json) as k group by 1, 2, 3`
      : `select f.dir_id, cast(k.key as integer) as field_id, cast(k.value as text) as v, count(*) as n from cat_files f, json_each(f.meta) as k group by 1, 2, 3`;
  const toObject = dialect === 'postgres' ? 'json_object_agg(v, n)::text' : 'json_group_object(v, n)';
  await sql.raw(`insert into cat_dir_file_summary (dir_id, field_id, vals) select dir_id, field_id, ${toObject} from (${valueCounts}) as x group by dir_id, field_id`).execute(db);
  // And the values held anywhere, with how many directories hold each (file-values.ts).
  await sql.raw(`insert into cat_file_values (field_id, key, dirs) select field_id, v, count(*) from (${valueCounts}) as x group by field_id, v`).execute(db);
  await sql.raw(`update cat_directories set files = (select count(*) from cat_files f where f.dir_id = cat_directories.id), size = coalesce((select sum(size) from cat_files f where f.dir_id = cat_directories.id), 0)`).execute(db);
  // Recursive totals, from the leaves up.
  const counts = await db.selectFrom('cat_directories').select(['id', 'parent_id', 'depth', 'files', 'size']).orderBy('depth', 'desc').execute();
  const tree = new Map<number, { files: number; size: number; parent: number | null }>();
  for (const c of counts) tree.set(Number(c.id), { files: Number(c.files), size: Number(c.size), parent: c.parent_id === null ? null : Number(c.parent_id) });
  for (const c of counts) {
    const t = tree.get(Number(c.id))!;
    if (t.parent !== null) {
      const p = tree.get(t.parent)!;
      p.files += t.files;
      p.size += t.size;
    }
  }
  const entries = [...tree.entries()];
  for (let i = 0; i < entries.length; i += 2000) {
    const part = entries.slice(i, i + 2000);
    const rows = part.map(([id, t]) => `(${id}, ${t.files}, ${t.size})`).join(', ');
    const from = dialect === 'postgres' ? `(values ${rows}) as x(id, tf, ts)` : `(select column1 as id, column2 as tf, column3 as ts from (values ${rows})) as x`;
    await sql.raw(`update cat_directories set tree_files = x.tf, tree_size = x.ts from ${from} where cat_directories.id = x.id`).execute(db);
  }
  if (dialect === 'postgres') await sql`vacuum analyze`.execute(db);
  else await sql`analyze`.execute(db);
  return { runsPerCampaign, seconds: (Date.now() - started) / 1000 };
}

