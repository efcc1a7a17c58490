/**
 * Where the workflow graph puts its nodes: in columns by dependency depth (a node is one column right of
 * its deepest parent, roots in the first), ordered within a column so that edges cross little (each node
 * near the mean row of its parents, then of its children: the barycentre method, a few sweeps). Pure
 * arithmetic, so that it is tested without a browser.
 */

export interface GraphNode {
  name: string;
  dependsOn: readonly string[];
}

export interface Placed {
  name: string;
  column: number;
  row: number;
  x: number;
  y: number;
}

export interface Edge {
  from: string;
  to: string;
  /** From the parent's right edge, middle, to the child's left edge, middle. */
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface Layout {
  nodes: Placed[];
  edges: Edge[];
  width: number;
  height: number;
}

export interface Sizes {
  box: { width: number; height: number };
  gap: { column: number; row: number };
}

const SWEEPS = 4;

/** Depth of each node: 0 without parents, else one more than its deepest parent (names not in the graph are ignored; a cycle, which the server refuses, stops at the node met again). */
export function depths(nodes: readonly GraphNode[]): Map<string, number> {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const visit = (name: string): number => {
    const known = depth.get(name);
    if (known !== undefined) return known;
    if (visiting.has(name)) return 0;
    visiting.add(name);
    const parents = (byName.get(name)?.dependsOn ?? []).filter((p) => byName.has(p) && p !== name);
    const d = parents.length ? 1 + Math.max(...parents.map(visit)) : 0;
    visiting.delete(name);
    depth.set(name, d);
    return d;
  };
  for (const n of nodes) visit(n.name);
  return depth;
}

function mean(values: number[]): number | undefined {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : undefined;
}

/** Orders each column by the mean position of the neighbours in `neighbours` (a stable sort: ties keep their order). */
function sweep(columns: string[][], neighbours: Map<string, string[]>, order: number[]): void {
  for (const c of order) {
    const position = new Map<string, number>();
    for (const column of columns) column.forEach((name, i) => position.set(name, i));
    const column = columns[c]!;
    const keyed = column.map((name, i) => ({ name, key: mean((neighbours.get(name) ?? []).map((n) => position.get(n)!).filter((p) => p !== undefined)) ?? i }));
    keyed.sort((a, b) => a.key - b.key);
    columns[c] = keyed.map((k) => k.name);
  }
}

export function layout(nodes: readonly GraphNode[], sizes: Sizes): Layout {
  const depth = depths(nodes);
  const names = new Set(nodes.map((n) => n.name));
  const columnCount = nodes.length ? Math.max(...depth.values()) + 1 : 0;
  const columns: string[][] = Array.from({ length: columnCount }, () => []);
  for (const n of nodes) columns[depth.get(n.name)!]!.push(n.name);

  const parents = new Map<string, string[]>();
  const children = new Map<string, string[]>();
  for (const n of nodes) {
    const ps = [...new Set(n.dependsOn)].filter((p) => names.has(p) && p !== n.name);
    parents.set(n.name, ps);
    for (const p of ps) children.set(p, [...(children.get(p) ?? []), n.name]);
  }
  const forward = Array.from({ length: columnCount }, (_, i) => i).slice(1);
  const backward = Array.from({ length: columnCount }, (_, i) => columnCount - 1 - i).slice(1);
  for (let s = 0; s < SWEEPS; s++) {
    sweep(columns, parents, forward);
    sweep(columns, children, backward);
  }

  // Each column centred on the tallest one.
  const { box, gap } = sizes;
  const tallest = Math.max(0, ...columns.map((c) => c.length));
  const height = tallest ? tallest * box.height + (tallest - 1) * gap.row : 0;
  const width = columnCount ? columnCount * box.width + (columnCount - 1) * gap.column : 0;
  const placed = new Map<string, Placed>();
  columns.forEach((column, c) => {
    const own = column.length * box.height + (column.length - 1) * gap.row;
    const top = (height - own) / 2;
    column.forEach((name, row) => placed.set(name, { name, column: c, row, x: c * (box.width + gap.column), y: top + row * (box.height + gap.row) }));
  });
  const edges: Edge[] = [];
  for (const n of nodes) {
    const to = placed.get(n.name)!;
    for (const p of parents.get(n.name) ?? []) {
      const from = placed.get(p)!;
      edges.push({ from: p, to: n.name, x1: from.x + box.width, y1: from.y + box.height / 2, x2: to.x, y2: to.y + box.height / 2 });
    }
  }
  return { nodes: nodes.map((n) => placed.get(n.name)!), edges, width, height };
}
