/**
 * Issue 39, the accounting API on SQLite and PostgreSQL over real TLS: usage per bucket (hour, UTC day,
 * ISO week, calendar month, total) and group, filters, totals and CPU efficiency; who sees what (a user
 * their own, JobAdministrator and JobMonitor everything, JobSharing the group's); the records in pages;
 * the queue's history; the APEL summary; CSV; and 400s naming the parameter.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { apelMessage } from '../../src/accounting/apel.ts';
import { toCsv, wantsCsv } from '../../src/accounting/csv.ts';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { RANGE, startAccountingService } from './kit.ts';

type Row = { Time: string; Group: string | null; Jobs: number; WallHours: number; CoreHours: number; CPUHours: number; CPUEfficiency: number | null };

describe('accounting CSV and APEL text', () => {
  it('quotes fields as RFC 4180 says, with CRLF line ends', () => {
    assert.equal(toCsv(['a', 'b'] as const, [{ a: 'x,y', b: 'say "hi"' }, { a: null, b: 2 }]), 'a,b\r\n"x,y","say ""hi"""\r\n,2\r\n');
  });
  it('answers CSV for format=csv, or for Accept: text/csv weighted at least as JSON', () => {
    assert.equal(wantsCsv('csv', undefined), true);
    assert.equal(wantsCsv('json', 'text/csv'), false);
    assert.equal(wantsCsv(undefined, 'text/csv'), true);
    assert.equal(wantsCsv(undefined, 'application/json, text/csv;q=0.5'), false);
    assert.equal(wantsCsv(undefined, '*/*'), false);
  });
  it('maps sites to their GOCDB names in the APEL message', () => {
    const text = apelMessage([{ site: 'Pool', ownerGroup: 'g', processors: 8, jobs: 3, wallSeconds: 10.4, cpuSeconds: 7.6, earliestEnd: 1, latestEnd: 2 }], 2026, 11, { vo: 'myvo', infrastructure: 'grid', submitHost: '', sites: { Pool: 'UKI-POOL' } }, 'ce.example.org');
    assert.equal(
      text,
      'APEL-summary-job-message: v0.3\nSite: UKI-POOL\nMonth: 11\nYear: 2026\nVO: myvo\nVOGroup: /myvo/g\nVORole: Role=NULL\nSubmitHost: ce.example.org\nInfrastructure: grid\nNodeCount: 1\nProcessors: 8\n' +
        'EarliestEndTime: 1\nLatestEndTime: 2\nWallDuration: 10\nCpuDuration: 8\nNormalisedWallDuration: 10\nNormalisedCpuDuration: 8\nNumberOfJobs: 3\n%%\n',
    );
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`the accounting API (${dialect})`, { skip }, () => {
    let svc: TestService;
    let admin: string;
    let alice: string;
    before(async () => {
      svc = await startAccountingService(dialect);
      admin = await svc.token('admin', 'dirigo_admin');
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    const usage = async (token: string, query: string) => {
      const res = await svc.request(`/accounting/jobs?${query}`, { token });
      assert.equal(res.status, 200, res.text);
      return res.json as { from: string; to: string; interval: string; groupBy: string | null; rows: Row[] };
    };
    const jobs = (rows: Row[]) => rows.map((r) => [r.Time.slice(0, 10), r.Group, r.Jobs]);

    it('sums everything for a JobAdministrator: totals and CPU efficiency', async () => {
      const all = await usage(admin, `${RANGE}&interval=total&allOwners=true`);
      assert.deepEqual([all.from, all.to, all.interval, all.groupBy], ['2026-10-31T00:00:00.000Z', '2026-11-03T00:00:00.000Z', 'total', null]);
      assert.deepEqual(all.rows, [{ Time: '2026-10-31T00:00:00.000Z', Group: null, Jobs: 5, WallHours: 5, CoreHours: 9, CPUHours: 3.5, CPUEfficiency: 0.7 }]);
      // Without allOwners even an administrator sees only their own (none).
      assert.deepEqual((await usage(admin, `${RANGE}&interval=total`)).rows, []);
    });

    it('buckets by UTC hour, day, ISO week and calendar month', async () => {
      const hours = await usage(admin, `${RANGE}&interval=hour&allOwners=true`);
      assert.deepEqual(
        hours.rows.map((r) => [r.Time, r.Jobs]),
        [['2026-10-31T23:00:00.000Z', 1], ['2026-11-01T00:00:00.000Z', 1], ['2026-11-02T01:00:00.000Z', 1], ['2026-11-02T03:00:00.000Z', 1], ['2026-11-02T04:00:00.000Z', 1]],
      );
      assert.deepEqual(jobs((await usage(admin, `${RANGE}&interval=day&allOwners=true`)).rows), [['2026-10-31', null, 1], ['2026-11-01', null, 1], ['2026-11-02', null, 3]]);
      assert.deepEqual(jobs((await usage(admin, `${RANGE}&interval=week&allOwners=true`)).rows), [['2026-10-26', null, 2], ['2026-11-02', null, 3]]);
      assert.deepEqual(jobs((await usage(admin, `${RANGE}&interval=month&allOwners=true`)).rows), [['2026-10-01', null, 1], ['2026-11-01', null, 4]]);
      // The default over three days is hourly; over three years, weekly; the range is rounded out to hours.
      const chosen = await usage(admin, 'from=2026-10-31T00:30:00Z&to=2026-11-02T23:10:00Z&allOwners=true');
      assert.deepEqual([chosen.interval, chosen.from, chosen.to], ['hour', '2026-10-31T00:00:00.000Z', '2026-11-03T00:00:00.000Z']);
      assert.equal((await usage(admin, 'from=2023-01-01T00:00:00Z&to=2026-12-31T00:00:00Z&allOwners=true')).interval, 'week');
    });

    it('groups by any attribute and filters by one value or several', async () => {
      const bySite = await usage(admin, `${RANGE}&interval=total&groupBy=Site&allOwners=true`);
      assert.deepEqual(
        bySite.rows.map((r) => [r.Group, r.Jobs, r.WallHours, r.CoreHours, r.CPUHours, r.CPUEfficiency]),
        [['Local', 3, 2, 5, 0.5, 0.5], ['Pool', 2, 3, 4, 3, 0.75]],
      );
      assert.deepEqual(jobs((await usage(admin, `${RANGE}&interval=total&groupBy=JobType&allOwners=true`)).rows), [['2026-10-31', 'MCSimulation', 1], ['2026-10-31', 'User', 4]]);
      assert.deepEqual(jobs((await usage(admin, `${RANGE}&interval=month&groupBy=Status&allOwners=true`)).rows), [['2026-10-01', 'Done', 1], ['2026-11-01', 'Done', 1], ['2026-11-01', 'Failed', 1], ['2026-11-01', 'Killed', 2]]);
      assert.deepEqual(jobs((await usage(admin, `${RANGE}&interval=total&groupBy=Owner&Owner=alice,bob&allOwners=true`)).rows), [['2026-10-31', 'alice', 2], ['2026-10-31', 'bob', 2]]);
      assert.deepEqual(jobs((await usage(admin, `${RANGE}&interval=total&groupBy=OwnerGroup&Site=Pool&Status=Done&allOwners=true`)).rows), [['2026-10-31', 'dirigo_prod', 1]]);
      // Bob's runs measured no CPU: no efficiency, not zero.
      assert.equal((await usage(admin, `${RANGE}&interval=total&Owner=bob&allOwners=true`)).rows[0]!.CPUEfficiency, null);
    });

    it("shows a user their own runs, JobSharing members their group's, JobMonitor everyone's", async () => {
      assert.deepEqual(jobs((await usage(alice, `${RANGE}&interval=total&groupBy=Owner`)).rows), [['2026-10-31', 'alice', 2]]);
      assert.deepEqual(jobs((await usage(alice, `${RANGE}&interval=total&groupBy=Owner&allOwners=true`)).rows), [['2026-10-31', 'alice', 2]]);
      // Someone else's runs are simply not there.
      assert.deepEqual((await usage(alice, `${RANGE}&interval=total&Owner=bob`)).rows, []);
      const sharing = await svc.token('alice', 'dirigo_prod');
      assert.deepEqual(jobs((await usage(sharing, `${RANGE}&interval=total&groupBy=Owner&allOwners=true`)).rows), [['2026-10-31', 'alice', 1], ['2026-10-31', 'carol', 1]]);
      assert.deepEqual((await usage(sharing, `${RANGE}&interval=total&OwnerGroup=dirigo_user&allOwners=true`)).rows, []);
      const monitor = await svc.token('carol', 'dirigo_monitor');
      assert.equal((await usage(monitor, `${RANGE}&interval=total&allOwners=true`)).rows[0]!.Jobs, 5);
      const bob = await svc.token('bob');
      assert.deepEqual(jobs((await usage(bob, `${RANGE}&interval=total&groupBy=Owner&allOwners=true`)).rows), [['2026-10-31', 'bob', 2]]);
    });

    it('answers CSV for format=csv and for Accept: text/csv', async () => {
      const res = await svc.request(`/accounting/jobs?${RANGE}&interval=total&groupBy=Site&allOwners=true&format=csv`, { token: admin });
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
      assert.match(String(res.headers['content-disposition']), /^attachment; filename="accounting-jobs-2026-10-31T00-2026-11-03T00\.csv"$/);
      assert.equal(res.text, 'Time,Group,Jobs,WallHours,CoreHours,CPUHours,CPUEfficiency\r\n2026-10-31T00:00:00.000Z,Local,3,2,5,0.5,0.5\r\n2026-10-31T00:00:00.000Z,Pool,2,3,4,3,0.75\r\n');
      const accepted = await svc.request(`/accounting/jobs?${RANGE}&interval=total`, { token: alice, headers: { accept: 'text/csv' } });
      assert.equal(accepted.text, 'Time,Group,Jobs,WallHours,CoreHours,CPUHours,CPUEfficiency\r\n2026-10-31T00:00:00.000Z,,2,2,3,1.5,0.5\r\n');
    });

    it('refuses bad input with a 400 naming the parameter', async () => {
      const bad = async (query: string, words: RegExp) => {
        const res = await svc.request(`/accounting/jobs?${query}`, { token: admin });
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.equal(res.json.error, 'invalid_request');
        assert.match(res.json.error_description, words, query);
      };
      await bad('from=yesterday', /^from: 'yesterday' is not an ISO 8601 date-time/);
      await bad('from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z', /^to: must be after from/);
      await bad('from=2010-01-01T00:00:00Z&to=2026-11-01T00:00:00Z', /^from: .*at most 10 years/);
      await bad('from=2016-12-01T00:00:00Z&to=2026-11-01T00:00:00Z&interval=hour', /^interval: hour over this range gives \d+ buckets/);
      await bad('groupBy=Nope', /groupBy/);
      await bad('interval=fortnight', /interval/);
      await bad('Owner=,', /^Owner: name a value/);
      await bad('format=xml', /format/);
      await bad('to=99999-01-01T00:00:00Z', /^to: /);
      await bad('from=2026-11-01T00:00:00&to=2026-11-02T00:00:00Z', /^from: /);
      const month = await svc.request('/accounting/apel?month=2026-13', { token: admin });
      assert.equal(month.status, 400);
      assert.match(month.json.error_description, /month/);
      assert.equal((await svc.request('/accounting/jobs')).status, 401);
    });

    it('answers any parameter text with a 2xx or a JSON 4xx, never a 5xx', async () => {
      const value = fc.oneof(fc.constantFrom('', ',', ' , ', '2026-11-01', '2026-02-30T25:00:00Z', '-1', '1e99', '99999999999999999999', "'; drop table usage_records; --", '\ud800', 'x'.repeat(5000)), fc.string({ maxLength: 20 }));
      const paths = ['/accounting/jobs', '/accounting/records', '/accounting/queue', '/accounting/apel'];
      const names = ['from', 'to', 'interval', 'groupBy', 'Owner', 'OwnerGroup', 'Site', 'JobType', 'Status', 'allOwners', 'format', 'limit', 'before', 'month'];
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...paths), fc.array(fc.tuple(fc.constantFrom(...names), value), { maxLength: 4 }), async (path, params) => {
          const query = params.map(([k, v]) => `${k}=${encodeURIComponent(v.toWellFormed())}`).join('&');
          const res = await svc.request(`${path}?${query}`, { token: admin });
          assert.ok(res.status < 500, `${path}?${query}: ${res.status} ${res.text}`);
          if (res.status >= 400) assert.equal(typeof res.json?.error, 'string', res.text);
        }),
        { numRuns: 80, seed: 3939 },
      );
    });

    it('pages the records newest first, with the visibility of the usage', async () => {
      const page = async (token: string, query: string) => {
        const res = await svc.request(`/accounting/records?${query}`, { token });
        assert.equal(res.status, 200, res.text);
        return res.json as { records: { RecordID: number; JobID: number; Owner: string; CPUUserSeconds: number | null; StartTime: string | null }[]; next: number | null };
      };
      const first = await page(admin, 'allOwners=true&limit=2');
      assert.deepEqual(first.records.map((r) => r.JobID), [5, 4]);
      assert.equal(first.next, first.records[1]!.RecordID);
      const second = await page(admin, `allOwners=true&limit=2&before=${first.next}`);
      assert.deepEqual(second.records.map((r) => r.JobID), [3, 2]);
      const last = await page(admin, `allOwners=true&limit=2&before=${second.next}`);
      assert.deepEqual([last.records.map((r) => r.JobID), last.next], [[1], null]);
      assert.deepEqual((await page(alice, '')).records.map((r) => r.JobID), [2, 1]);
      assert.deepEqual((await page(admin, 'allOwners=true&Site=Local&Status=Killed&from=2026-11-02T02:00:00Z')).records.map((r) => [r.JobID, r.StartTime, r.CPUUserSeconds]), [[5, null, null]]);
      const csv = await svc.request('/accounting/records?format=csv', { token: alice });
      assert.equal(csv.headers['content-type'], 'text/csv; charset=utf-8');
      const lines = csv.text.trimEnd().split('\r\n');
      assert.equal(lines[0], 'RecordID,JobID,Run,Owner,OwnerGroup,Site,Resource,JobType,StartTime,EndTime,WallSeconds,CPUUserSeconds,CPUSystemSeconds,MaxRSSKB,Processors,Status,ExitCode');
      assert.match(lines[1]!, /^\d+,2,1,alice,dirigo_prod,Pool,node1,MCSimulation,2026-10-31T23:30:00.000Z,2026-11-01T00:30:00.000Z,3600,3000,600,1024,2,Done,0$/);
      assert.equal((await svc.request('/accounting/records?limit=0', { token: alice })).status, 400);
      assert.equal((await svc.request('/accounting/records?before=99999999999999999999', { token: alice })).status, 400);
      assert.equal((await svc.request('/accounting/records?from=2026-11-02&to=2026-11-01', { token: alice })).status, 400);
    });

    it("gives the queue's history to JobAdministrator and JobMonitor only", async () => {
      const minute = Math.floor(Date.now() / 60_000 - 120) * 60;
      const hour = Math.floor(minute / 3600) * 3600;
      const rows = [
        { resolution: 'minute', time: minute, status: 'Waiting', owner_group: 'dirigo_user', site: 'Local', jobs: 10 },
        { resolution: 'minute', time: minute, status: 'Running', owner_group: 'dirigo_prod', site: 'Pool', jobs: 4 },
        { resolution: 'minute', time: minute + 60, status: 'Waiting', owner_group: 'dirigo_user', site: 'Local', jobs: 3 },
        { resolution: 'hour', time: hour, status: 'Waiting', owner_group: 'dirigo_user', site: 'Local', jobs: 120 },
      ];
      await svc.ctx.db.insertInto('queue_history').values(rows).execute();
      await svc.ctx.db
        .insertInto('queue_history_samples')
        .values([{ resolution: 'minute', time: minute, samples: 2 }, { resolution: 'minute', time: minute + 60, samples: 1 }, { resolution: 'hour', time: hour, samples: 60 }])
        .execute();
      const queue = async (query: string) => {
        const res = await svc.request(`/accounting/queue?${query}`, { token: admin });
        assert.equal(res.status, 200, res.text);
        return res.json as { interval: string; rows: { Time: string; Group: string | null; Jobs: number }[] };
      };
      const byStatus = await queue('groupBy=Status');
      assert.equal(byStatus.interval, 'minute');
      assert.deepEqual(byStatus.rows.map((r) => [r.Time, r.Group, r.Jobs]), [[new Date(minute * 1000).toISOString(), 'Running', 2], [new Date(minute * 1000).toISOString(), 'Waiting', 5], [new Date((minute + 60) * 1000).toISOString(), 'Running', 0], [new Date((minute + 60) * 1000).toISOString(), 'Waiting', 3]]);
      assert.deepEqual((await queue('OwnerGroup=dirigo_prod')).rows.map((r) => r.Jobs), [2, 0]);
      assert.deepEqual((await queue('interval=hour&groupBy=Site')).rows.map((r) => [r.Group, r.Jobs]), [['Local', 2]]);
      const csv = await svc.request('/accounting/queue?Site=Local&format=csv', { token: await svc.token('carol', 'dirigo_monitor') });
      assert.equal(csv.text.split('\r\n')[0], 'Time,Group,Jobs');
      const refused = await svc.request('/accounting/queue', { token: alice });
      assert.equal(refused.status, 403);
      assert.match(refused.json.error_description, /JobAdministrator or JobMonitor/);
      assert.equal((await svc.request('/accounting/queue?interval=minute&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z', { token: admin })).status, 400);
    });

    it('writes the APEL summary of a month: per site, VO group and processors', async () => {
      const res = await svc.request('/accounting/apel?month=2026-11', { token: admin });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
      const [header, ...rest] = res.text.split('\n');
      assert.equal(header, 'APEL-summary-job-message: v0.3');
      const summaries = rest.join('\n').split('%%\n').filter((s) => s.trim()).map((s) => Object.fromEntries(s.trim().split('\n').map((l) => l.split(': ') as [string, string])));
      const host = new URL(svc.url).host;
      assert.deepEqual(
        summaries.map((s) => [s.Site, s.VOGroup, s.Processors, s.NumberOfJobs, s.WallDuration, s.CpuDuration, s.SubmitHost, s.Month, s.Year]),
        [
          ['Local', '/dirigo/dirigo_user', '4', '1', '3600', '0', host, '11', '2026'],
          ['Pool', '/dirigo/dirigo_prod', '1', '1', '7200', '7200', host, '11', '2026'],
          ['Pool', '/dirigo/dirigo_prod', '2', '1', '3600', '3600', host, '11', '2026'],
        ],
      );
      assert.equal(summaries[1]!.EarliestEndTime, String(Date.parse('2026-11-02T03:00:00Z') / 1000));
      assert.equal((await svc.request('/accounting/apel?month=2026-10', { token: admin })).text.split('%%').length, 2);
      assert.equal((await svc.request('/accounting/apel?month=2026-11', { token: alice })).status, 403);
    });
  });
}
