/**
 * The file search is flat in cost: a page reads about as many rows with 100,000 files
 * as with 10. No timings (the machine is shared): on SQLite the plans are asserted to walk an index in the
 * page's order (no scan of the files, no sort, so the LIMIT stops the walk) and to be the same at both
 * sizes; on PostgreSQL, EXPLAIN ANALYZE counts the rows every plan node read, which must stay within a
 * few pages' worth however many files there are.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery } from 'kysely';
import { parseConditions } from '../../src/catalogue/conditions.ts';
import { CatalogueStore } from '../../src/catalogue/store.ts';
import { byFileValueQuery, directoryBatchQuery, filesOfDirectoryQuery, findPlan } from '../../src/catalogue/store/find.ts';
import { valueIntervals } from '../../src/catalogue/value-intervals.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const PAGE = 50;
const b64 = (p: string) => Buffer.from(p).toString('base64url');

/** The searches checked: file equality, file range, directory equality, and both kinds together. */
const SEARCHES = ['Quality=%3D|good', 'Events=%3E%3D|3&Events=%3C|90000', 'Run=%3D|0', 'Quality=%3D|good&Run=%3E%3D|0', 'Quality=%3D|rare', 'Quality=in|good,rare', 'Quality=!%3D|bad'];

interface Explained {
  plan: string[];
  rowsRead: number;
}

for (const { dialect, skip } of await dialects()) {
  describe(`file search cost (${dialect})`, { skip, timeout: 900_000 }, () => {
    const plans = new Map<number, Map<string, string[]>>();
    const reads = new Map<number, Map<string, number>>();

    for (const files of [10, 100_000]) {
      describe(`${files} files`, () => {
        let svc: TestService;
        let token: string;
        before(async () => {
          svc = await startTestService({ dialect, config: { catalogue: { bulkBodyLimit: 64 << 20 } } });
          const admin = await svc.token('admin', 'dirigo_admin');
          token = await svc.token('alice', 'dirigo_user');
          for (const [Name, Type, Scope] of [['Run', 'int', 'directory'], ['Quality', 'string', 'file'], ['Events', 'int', 'file']]) {
            assert.equal((await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name, Type, Scope } })).status, 201);
          }
          // 100 files a directory; Run is the directory's number, half the files good, one rare.
          const lines: string[] = [];
          for (let i = 0; i < files; i++) {
            const d = Math.floor(i / 100);
            if (i % 100 === 0) lines.push(JSON.stringify({ dir: `/s/d${d}`, metadata: { Run: d } }));
            lines.push(JSON.stringify({ file: `/s/d${d}/f${i}`, size: 1, checksum: 'x', metadata: { Quality: i === files - 1 ? 'rare' : i % 2 === 0 ? 'good' : 'bad', Events: i } }));
          }
          const res = await svc.request('/filecatalogue/bulk', { method: 'POST', token, headers: { 'content-type': 'application/x-ndjson' }, body: lines.join('\n') });
          assert.equal(res.status, 200, res.text);
          // What autovacuum does after an import: the planner's statistics.
          if (dialect === 'postgres') await svc.ctx.db.executeQuery(CompiledQuery.raw('analyze'));
        });
        after(() => svc?.close());

        it('answers every search page by page', async () => {
          const first = await svc.request(`/filecatalogue/directory/${b64('/s')}/find?Quality=%3D|good&maxFiles=${PAGE}`, { token });
          assert.equal(first.status, 200, first.text);
          assert.equal(first.json.Files.length, Math.min(PAGE, files / 2));
          const rare = await svc.request(`/filecatalogue/directory/${b64('/s')}/find?Quality=%3D|rare`, { token });
          assert.deepEqual(rare.json.Files.map((f: { Path: string }) => f.Path), [`/s/d${Math.floor((files - 1) / 100)}/f${files - 1}`]);
        });

        it('walks indexes in page order: plans (SQLite) and rows read (PostgreSQL)', async () => {
          const store = new CatalogueStore(svc.ctx.db, svc.ctx.config.catalogue);
          const fields = await store.fields();
          const pg = dialect === 'postgres';
          // A query builder compiles without an argument, a raw one with the database: both take it.
          const explain = async (query: { compile(db: typeof svc.ctx.db): CompiledQuery }): Promise<Explained> => {
            const c = query.compile(svc.ctx.db);
            if (!pg) {
              const rows = (await svc.ctx.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${c.sql}`, [...c.parameters]))).rows;
              return { plan: rows.map((r) => r.detail.replace(/\d+/g, 'N')), rowsRead: 0 };
            }
            const rows = (await svc.ctx.db.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`explain (analyze, format json) ${c.sql}`, [...c.parameters]))).rows;
            const root = (rows[0]!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
            let rowsRead = 0;
            const plan: string[] = [];
            const walk = (n: PlanNode) => {
              plan.push(`${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''}${n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}`);
              if (n['Relation Name'] || n['Index Name']) rowsRead += (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * n['Actual Loops'];
              for (const child of n.Plans ?? []) walk(child);
            };
            walk(root);
            return { plan, rowsRead };
          };
          const byPlan = plans.get(files) ?? new Map<string, string[]>();
          const byRows = reads.get(files) ?? new Map<string, number>();
          plans.set(files, byPlan);
          reads.set(files, byRows);
          for (const search of SEARCHES) {
            const { fileTerms, dirTerms, driver } = findPlan(parseConditions(search, fields, { scope: 'any' }));
            // A deep page: after the middle of the files.
            const middle = { dir: 1 + Math.floor(files / 200), name: `f${Math.floor(files / 2)}` };
            const queries = driver
              ? valueIntervals(driver).flatMap((interval) => [
                  byFileValueQuery(pg, '/s', fileTerms, dirTerms, driver, interval, undefined, PAGE + 1),
                  byFileValueQuery(pg, '/s', fileTerms, dirTerms, driver, interval, { kind: 'f', value: driver.field.type === 'string' ? 'good' : files / 2, ...middle }, PAGE + 1),
                ])
              : [directoryBatchQuery(svc.ctx.db, store.dialect, '/s', dirTerms, middle.dir), filesOfDirectoryQuery(pg, { id: middle.dir, path: '/s/d', eff: null }, fileTerms, middle.name, PAGE + 1)];
            const explained = await Promise.all(queries.map((q) => explain(q)));
            const plan = explained.flatMap((e) => e.plan);
            byPlan.set(search, plan);
            byRows.set(search, Math.max(...explained.map((e) => e.rowsRead)));
            if (!pg) {
              const text = plan.join('\n');
              assert.doesNotMatch(text, /TEMP B-TREE/, `${search}: a sort reads every match before the first page\n${text}`);
              assert.doesNotMatch(text, /^SCAN (f|cat_files)\b(?! USING (COVERING )?INDEX cat_files_fN)/m, `${search}: a scan of the files\n${text}`);
              if (driver) assert.match(text, /(SEARCH|SCAN) f USING (COVERING )?INDEX cat_files_fN/, `${search}: the driving field's value index\n${text}`);
            }
          }
        });
      });
    }

    it('costs a page the same at 10 and at 100,000 files', () => {
      for (const search of SEARCHES) {
        if (dialect === 'sqlite') {
          // Without statistics SQLite plans by the schema alone: the same walk whatever the size.
          assert.deepEqual(plans.get(100_000)!.get(search), plans.get(10)!.get(search), search);
        } else {
          const small = reads.get(10)!.get(search)!;
          const large = reads.get(100_000)!.get(search)!;
          // A page of PAGE files (one more to know there is a next), the directories they are in, and
          // the few index entries a walk steps over: a bound that does not move with the catalogue.
          assert.ok(large <= 4 * (PAGE + 1) + 64, `${search}: ${large} rows read for a page of ${PAGE} at 100,000 files (${small} at 10)`);
        }
      }
    });
  });
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}
