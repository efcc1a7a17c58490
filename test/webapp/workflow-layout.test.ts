/**
 * The workflow graph's layout (web/src/workflows/layout.ts): columns by dependency depth, each node right
 * of all its parents, edges from a parent's right side to its child's left side, and crossings undone
 * where the barycentre ordering can.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { depths, layout, type GraphNode } from '../../web/src/workflows/layout.ts';

const SIZES = { box: { width: 100, height: 50 }, gap: { column: 20, row: 10 } };

describe('the workflow graph layout', () => {
  it('puts a node one column right of its deepest parent', () => {
    const nodes: GraphNode[] = [
      { name: 'merge', dependsOn: ['reco', 'simulate'] },
      { name: 'simulate', dependsOn: [] },
      { name: 'reco', dependsOn: ['simulate'] },
      { name: 'alone', dependsOn: [] },
    ];
    assert.deepEqual(Object.fromEntries(depths(nodes)), { merge: 2, simulate: 0, reco: 1, alone: 0 });
    const shape = layout(nodes, SIZES);
    assert.equal(shape.width, 3 * 100 + 2 * 20);
    assert.equal(shape.height, 2 * 50 + 10);
    const at = Object.fromEntries(shape.nodes.map((n) => [n.name, n]));
    assert.deepEqual([at.simulate!.x, at.reco!.x, at.merge!.x], [0, 120, 240]);
    // A lone column is centred on the tallest one.
    assert.equal(at.reco!.y, 30);
    assert.equal(shape.edges.length, 3);
    for (const e of shape.edges) {
      assert.equal(e.x1, at[e.from]!.x + 100);
      assert.equal(e.x2, at[e.to]!.x);
      assert.equal(e.y2, at[e.to]!.y + 25);
      assert.ok(e.x1 < e.x2);
    }
  });

  it('orders a column by its parents, so that two chains do not cross', () => {
    const nodes: GraphNode[] = [
      { name: 'a', dependsOn: [] },
      { name: 'b', dependsOn: [] },
      { name: 'b2', dependsOn: ['b'] },
      { name: 'a2', dependsOn: ['a'] },
    ];
    const at = Object.fromEntries(layout(nodes, SIZES).nodes.map((n) => [n.name, n]));
    assert.ok(at.a!.y < at.b!.y);
    assert.ok(at.a2!.y < at.b2!.y, 'a2 beside a, b2 beside b');
  });

  it('ignores unknown names and survives a cycle (the server refuses both)', () => {
    const shape = layout(
      [
        { name: 'x', dependsOn: ['y', 'ghost'] },
        { name: 'y', dependsOn: ['x'] },
      ],
      SIZES,
    );
    assert.equal(shape.nodes.length, 2);
    assert.equal(layout([], SIZES).width, 0);
  });
});
