/**
 * What a file registration becomes once its schema checked it (REST bodies and bulk lines alike), with
 * the check of its metadata against the fields defined at that moment; messages name the key.
 */
import { InvalidRequest } from '../kernel/errors.ts';
import type { NewFile } from './store.ts';
import { parseMode } from './permissions.ts';
import { toStored, type Field } from './values.ts';

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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

/** A file registration's parts, as a REST body or a bulk line gives them once their schema checked them. */
export interface FileParts {
  size: number;
  checksum: string;
  checksumType?: string | undefined;
  guid?: string | undefined;
  status?: string | undefined;
  mode?: number | string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** The file the store registers: its mode as bits, its metadata checked against the fields defined now. */
export function newFile(path: string, parts: FileParts, fields: ReadonlyMap<string, Field>, what: string): NewFile {
  const { size, checksum, checksumType, guid, status } = parts;
  return { path, size, checksum, checksumType, guid, status, mode: parseMode(parts.mode, `${what}: mode`), metadata: fileMetadata(parts.metadata ?? {}, fields, what) };
}
