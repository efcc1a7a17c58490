/** The value intervals a file search walks (value-intervals.ts): disjoint, in index order, exact for short lists. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldCondition, Predicate } from '../../src/catalogue/conditions.ts';
import { valueIntervals } from '../../src/catalogue/value-intervals.ts';

const term = (type: 'int' | 'string', ...predicates: Predicate[]): FieldCondition => ({ field: { id: 1, name: 'F', type, scope: 'file' }, predicates });
const show = (t: FieldCondition) =>
  valueIntervals(t).map((i) => `${i.lower ? (i.lower.inclusive ? '[' : '(') + String(i.lower.value) : '(-'},${i.upper ? String(i.upper.value) + (i.upper.inclusive ? ']' : ')') : '+)'}`);

describe('value intervals', () => {
  it('orders points, ranges and the gaps around excluded values', () => {
    assert.deepEqual(show(term('int', { op: '>=', value: 5 }, { op: '<', value: 10 })), ['[5,10)']);
    assert.deepEqual(show(term('int', { op: '>=', value: 5 }, { op: '!=', value: 7 })), ['[5,7)', '(7,+)']);
    assert.deepEqual(show(term('int', { op: 'in', values: [9, 2, 5] }, { op: '<', value: 9 })), ['[2,2]', '[5,5]']);
    assert.deepEqual(show(term('int', { op: '>', value: 3 }, { op: '<', value: 3 })), []);
    // Code point order, as SQLite's BINARY and PostgreSQL's "C": 'B' before 'a'.
    assert.deepEqual(show(term('string', { op: 'nin', values: ['a', 'B'] })), ['(-,B)', '(B,a)', '(a,+)']);
    assert.deepEqual(show(term('string', { op: 'in', values: ['é', 'z', 'A'] })), ['[A,A]', '[z,z]', '[é,é]']);
    // A long list: one interval spanning it (the list is then checked row by row).
    assert.deepEqual(show(term('int', { op: 'in', values: Array.from({ length: 40 }, (_, i) => 40 - i) })), ['[1,40]']);
  });
});
