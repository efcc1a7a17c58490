/**
 * Metadata field types and their values. Every value is stored in one of two indexed columns so that all
 * comparisons are index range scans on both dialects:
 * - `int`, `float` and `date` in `num` (double precision; dates as milliseconds since the epoch, UTC).
 *   Integers are limited to the safe range ±(2^53 − 1) so that a double holds them exactly;
 * - `string` in `str` (at most 1024 characters).
 */
import { InvalidRequest } from '../kernel/errors.ts';

export type FieldType = 'int' | 'float' | 'string' | 'date';
export type FieldScope = 'directory' | 'file';
export const FIELD_TYPES: readonly FieldType[] = ['int', 'float', 'string', 'date'];
export const FIELD_SCOPES: readonly FieldScope[] = ['directory', 'file'];
export const MAX_STRING_VALUE = 1024;

export interface Field {
  id: number;
  name: string;
  type: FieldType;
  scope: FieldScope;
}

/** A value as stored: exactly one of the two columns is set. */
export interface StoredValue {
  num: number | null;
  str: string | null;
}

/** A value as JSON shows it: numbers for int/float, ISO 8601 text for dates, strings. */
export type JsonValue = number | string;

const INT = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
// ISO 8601 calendar date, optionally with time and zone (no zone means UTC).
const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

function parseDate(text: string, what: string): number {
  if (!DATE.test(text)) throw new InvalidRequest(`${what}: '${text}' is not an ISO 8601 date (YYYY-MM-DD or YYYY-MM-DDThh:mm[:ss][Z|±hh:mm])`);
  const zoned = text.length > 10 && !/(Z|[+-]\d{2}:?\d{2})$/.test(text) ? `${text}Z` : text;
  const ms = Date.parse(zoned);
  if (!Number.isFinite(ms)) throw new InvalidRequest(`${what}: '${text}' is not a valid date`);
  return ms;
}

/** Parses a value written as text (query conditions) for a field of `type`. */
export function parseText(type: FieldType, text: string, what: string): number | string {
  switch (type) {
    case 'int': {
      const n = Number(text);
      if (!INT.test(text) || !Number.isSafeInteger(n)) throw new InvalidRequest(`${what}: '${text}' is not an integer in ±(2^53 − 1)`);
      return n;
    }
    case 'float': {
      const n = Number(text);
      if (!FLOAT.test(text) || !Number.isFinite(n)) throw new InvalidRequest(`${what}: '${text}' is not a finite number`);
      return n;
    }
    case 'date':
      return parseDate(text, what);
    case 'string':
      if (text.length > MAX_STRING_VALUE) throw new InvalidRequest(`${what}: the value is longer than ${MAX_STRING_VALUE} characters`);
      return text;
  }
}

/** Type-checks a JSON value (request bodies) for `field` and returns it as stored. */
export function toStored(field: Pick<Field, 'name' | 'type'>, value: unknown): StoredValue {
  const what = `metadata ${field.name} (${field.type})`;
  switch (field.type) {
    case 'int':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new InvalidRequest(`${what}: ${JSON.stringify(value)} is not an integer in ±(2^53 − 1)`);
      return { num: value, str: null };
    case 'float':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new InvalidRequest(`${what}: ${JSON.stringify(value)} is not a finite number`);
      return { num: value, str: null };
    case 'date':
      if (typeof value !== 'string') throw new InvalidRequest(`${what}: ${JSON.stringify(value)} is not an ISO 8601 date string`);
      return { num: parseDate(value, what), str: null };
    case 'string':
      if (typeof value !== 'string') throw new InvalidRequest(`${what}: ${JSON.stringify(value)} is not a string`);
      if (value.length > MAX_STRING_VALUE) throw new InvalidRequest(`${what}: the value is longer than ${MAX_STRING_VALUE} characters`);
      return { num: null, str: value };
  }
}

/** Fields by id (stored values name their field by id). */
export function fieldsById(fields: ReadonlyMap<string, Field>): Map<number, Field> {
  return new Map([...fields.values()].map((f) => [f.id, f]));
}

/** Values as one JSON object keyed by field id (file rows, directory documents): numbers or strings as stored. */
export function valuesById(values: readonly { field: Pick<Field, 'id'>; value: StoredValue }[]): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  for (const { field, value } of values) out[field.id] = value.str ?? value.num!;
  return out;
}

/** A stored value as JSON shows it. */
export function fromStored(type: FieldType, value: StoredValue): JsonValue {
  if (type === 'string') return value.str ?? '';
  const n = Number(value.num);
  return type === 'date' ? new Date(n).toISOString() : n;
}

/** Orders JSON values of one field for stable answers. */
export function compareValues(a: JsonValue, b: JsonValue): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}
