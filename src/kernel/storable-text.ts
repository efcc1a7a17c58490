/**
 * Text that every store can hold. PostgreSQL refuses NUL in text (SQLite keeps it), so a NUL anywhere in a
 * request would be a 500 on one database and stored on the other; it is refused up front instead, for
 * every route, with a 400 naming the field.
 */
import { InvalidRequest } from './errors.ts';

const NUL = '\u0000';

/** Parsed JSON, query strings and forms are walked; streams and buffers (bodies read later) are not. */
function isRecord(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v) || v instanceof Date) return false;
  return typeof (v as { pipe?: unknown }).pipe !== 'function';
}

/**
 * Throws InvalidRequest naming the first string (or object key) under `value` that holds a NUL.
 * Iterative, so that deeply nested JSON cannot exhaust the stack.
 */
export function refuseUnstorableText(value: unknown, where: string): void {
  // Every request passes here three times: the common case (no NUL) is found without building paths.
  if (!holdsNul(value)) return;
  const pending: [unknown, string][] = [[value, where]];
  const seen = new Set<object>();
  while (pending.length > 0) {
    const [v, path] = pending.pop()!;
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) continue;
      seen.add(v);
    }
    if (typeof v === 'string') {
      if (v.includes(NUL)) throw new InvalidRequest(`${path} contains a NUL character, which cannot be stored`);
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) pending.push([v[i], `${path}[${i}]`]);
    } else if (isRecord(v)) {
      for (const [k, child] of Object.entries(v)) {
        if (k.includes(NUL)) throw new InvalidRequest(`${path} has a key with a NUL character, which cannot be stored`);
        pending.push([child, `${path}.${k}`]);
      }
    }
  }
}

/** Whether any string or key under `value` holds a NUL. */
function holdsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  const seen = new Set<object>();
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === 'string') {
      if (v.includes(NUL)) return true;
    } else if (typeof v === 'object' && v !== null && !seen.has(v)) {
      seen.add(v);
      if (Array.isArray(v)) pending.push(...(v as unknown[]));
      else if (isRecord(v))
        for (const k of Object.keys(v)) {
          if (k.includes(NUL)) return true;
          pending.push(v[k]);
        }
    }
  }
  return false;
}
