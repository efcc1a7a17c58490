/**
 * Issue 39, the Accounting page's view and series without a browser: the address read back into a view
 * (defaults, a fixed range, nonsense ignored), quick ranges ending at the coming hour, the API's filters
 * comma-separated, every bucket of a range (UTC days, weeks from Monday, months), and rows turned into
 * series whose keys a dotted site name cannot break.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { filterQuery, readView, timeRange } from '../../web/src/accounting/view.ts';
import { bucketsOf, pivot } from '../../web/src/accounting/series.ts';

describe('the Accounting page, view and series', () => {
  it('reads the address, with defaults for what is missing or not understood', () => {
    const v = readView(new URLSearchParams('groupBy=Site&measure=cpu&interval=day&Site=A&Site=B&allOwners=true'));
    assert.deepEqual(v, { range: 'month', from: undefined, to: undefined, interval: 'day', groupBy: 'Site', measure: 'cpu', filters: { Site: ['A', 'B'] }, allOwners: true });
    const odd = readView(new URLSearchParams('groupBy=Nope&measure=toString&interval=year&range=decade&from=2026-01-01T00:00'));
    assert.deepEqual([odd.range, odd.groupBy, odd.measure, odd.interval, odd.from], [undefined, 'OwnerGroup', 'jobs', undefined, '2026-01-01T00:00']);
    assert.deepEqual(filterQuery(v), [['Site', 'A,B']]);
  });

  it('ends a quick range at the coming hour and reads a fixed one as UTC', () => {
    const now = Date.parse('2026-11-27T15:20:00Z');
    assert.deepEqual(timeRange(readView(new URLSearchParams('range=day')), now), { from: '2026-11-26T16:00:00.000Z', to: '2026-11-27T16:00:00.000Z' });
    assert.deepEqual(timeRange(readView(new URLSearchParams('from=2026-11-01T06:30&to=2026-11-02')), now), { from: '2026-11-01T06:30:00.000Z', to: '2026-11-02T00:00:00.000Z' });
    assert.deepEqual(timeRange(readView(new URLSearchParams('from=garbage')), now), {});
  });

  it('lists every bucket of a range as the server cuts them', () => {
    assert.deepEqual(bucketsOf('2026-11-26T22:00:00Z', '2026-11-27T01:00:00Z', 'hour'), ['2026-11-26T22:00:00.000Z', '2026-11-26T23:00:00.000Z', '2026-11-27T00:00:00.000Z']);
    assert.deepEqual(bucketsOf('2026-11-26T15:00:00Z', '2026-11-28T00:00:00Z', 'day'), ['2026-11-26T00:00:00.000Z', '2026-11-27T00:00:00.000Z']);
    // 2026-11-26 is a Thursday: its week starts on Monday the 23rd.
    assert.deepEqual(bucketsOf('2026-11-26T15:00:00Z', '2026-12-01T00:00:00Z', 'week'), ['2026-11-23T00:00:00.000Z', '2026-11-30T00:00:00.000Z']);
    assert.deepEqual(bucketsOf('2026-11-26T15:00:00Z', '2027-01-15T00:00:00Z', 'month'), ['2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
    assert.deepEqual(bucketsOf('2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z', 'minute'), [], 'too many to fill');
    assert.deepEqual(bucketsOf('2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z', 'total'), []);
  });

  it('turns rows into series with safe keys, zeros where a group or a bucket had nothing', () => {
    const rows = [
      { Time: '2026-11-26T00:00:00.000Z', Group: 'LCG.CERN.ch', Jobs: 2 },
      { Time: '2026-11-26T00:00:00.000Z', Group: 'Local', Jobs: 1 },
      { Time: '2026-11-28T00:00:00Z', Group: 'Local', Jobs: 1.234 },
    ];
    const p = pivot(rows, (r) => r.Jobs, 'day', bucketsOf('2026-11-26T00:00:00Z', '2026-11-29T00:00:00Z', 'day'));
    assert.deepEqual(p.series.map((s) => [s.key, s.label]), [['s0', 'LCG.CERN.ch'], ['s1', 'Local']]);
    assert.deepEqual(p.data, [
      { time: '2026-11-26', s0: 2, s1: 1 },
      { time: '2026-11-27', s0: 0, s1: 0 },
      { time: '2026-11-28', s0: 0, s1: 1.23 },
    ]);
    assert.deepEqual(pivot([], (r: { Time: string; Group: string | null }) => r.Time.length, 'day', ['2026-11-26T00:00:00.000Z']).data, [], 'nothing to draw when nothing ran');
  });
});
