/**
 * An audit entry's before/after as a readable difference: one row per field that changed (added,
 * removed or changed), nested values flattened to dotted names, lists shown as comma-separated text.
 */

export interface DiffRow {
  field: string;
  before: string | undefined;
  after: string | undefined;
}

type Flat = Map<string, string>;

function show(value: unknown): string {
  if (value === null) return '—';
  if (Array.isArray(value)) return value.every((v) => typeof v !== 'object' || v === null) ? value.map(String).join(', ') || '(none)' : JSON.stringify(value);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function flatten(value: unknown, prefix: string, out: Flat): Flat {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (value !== undefined) {
    out.set(prefix || '(value)', show(value));
  }
  return out;
}

/** The fields whose value differs between `before` and `after` (null or absent: the entry did not exist). */
export function auditDiff(before: unknown, after: unknown): DiffRow[] {
  const a = flatten(before ?? undefined, '', new Map());
  const b = flatten(after ?? undefined, '', new Map());
  const fields = [...new Set([...a.keys(), ...b.keys()])];
  return fields.filter((f) => a.get(f) !== b.get(f)).map((field) => ({ field, before: a.get(field), after: b.get(field) }));
}
