/**
 * Checks of bulk lines (a stream, read line by line: no route schema sees them), and of file metadata
 * against the defined fields, which REST writes share; messages name the key.
 */
import { InvalidRequest } from '../kernel/errors.ts';
import type { NewFile } from './store.ts';
import { parseMode } from './permissions.ts';
import { toStored, type Field } from './values.ts';

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkKeys(body: Record<string, unknown>, allowed: readonly string[], what: string): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw new InvalidRequest(`${what}: unknown key ${JSON.stringify(key)} (expected ${allowed.join(', ')})`);
  }
}

function optionalString(value: unknown, key: string, max: number, what: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > max) throw new InvalidRequest(`${what}: ${key} must be a string of 1–${max} characters`);
  return value;
}

/** A metadata object: `{field: value}`; with `allowNull`, null removes a value. */
export function metadataObject(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw new InvalidRequest(`${what}: metadata must be an object {"field": value}`);
  return value;
}

/** Type-checks file metadata for registration (nulls are simply absent). */
export function fileMetadata(metadata: Record<string, unknown>, fields: ReadonlyMap<string, Field>, what: string): NewFile['metadata'] {
  const out: NewFile['metadata'] = [];
  for (const [name, value] of Object.entries(metadata)) {
    const field = fields.get(name);
    if (!field) throw new InvalidRequest(`${what}: metadata ${JSON.stringify(name)}: no such field`);
    if (field.scope !== 'file') throw new InvalidRequest(`${what}: metadata ${name} is a directory field; set it on a directory (files inherit it)`);
    if (value === null) continue;
    out.push({ field, value: toStored(field, value) });
  }
  return out;
}

/** Keys of a bulk file line (lower camel case; REST bodies, checked by their schema, use DESIGN's record names). */
export const BULK_FILE_KEYS = { size: 'size', checksum: 'checksum', checksumType: 'checksumType', guid: 'guid', status: 'status', mode: 'mode', metadata: 'metadata' } as const;

export function newFile(
  path: string,
  body: Record<string, unknown>,
  fields: ReadonlyMap<string, Field>,
  keys: typeof BULK_FILE_KEYS,
  extraKeys: readonly string[],
  what: string,
): NewFile {
  checkKeys(body, [...Object.values(keys), ...extraKeys], what);
  const size = body[keys.size];
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw new InvalidRequest(`${what}: ${keys.size} must be a non-negative integer`);
  const checksum = optionalString(body[keys.checksum], keys.checksum, 128, what);
  if (checksum === undefined) throw new InvalidRequest(`${what}: ${keys.checksum} is required`);
  return {
    path,
    size,
    checksum,
    checksumType: optionalString(body[keys.checksumType], keys.checksumType, 32, what),
    guid: optionalString(body[keys.guid], keys.guid, 64, what),
    status: optionalString(body[keys.status], keys.status, 32, what),
    mode: parseMode(body[keys.mode], `${what}: ${keys.mode}`),
    metadata: fileMetadata(metadataObject(body[keys.metadata], what), fields, what),
  };
}
