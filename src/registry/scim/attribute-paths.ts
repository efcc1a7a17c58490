/**
 * Attribute paths (RFC 7644 §3.10: `[schema URN ":"] attribute ["." subAttribute]`), resolved against a
 * resource type's schemas: names case-insensitive, turned into the keys the resources use, and read.
 */
import type { AttributeDefinition, ResourceAttributes } from './schema-definitions.ts';

export interface ResolvedPath {
  /** JSON keys from the resource to the attribute, e.g. ['emails', 'value'] or [extension URN, 'x509Dns']. */
  keys: string[];
  /** The attribute the path ends at. */
  def: AttributeDefinition;
  /** Whether some step of the path is multi-valued (the path then reads several values). */
  multi: boolean;
}

/** Where names resolve: a resource type's top level, or the sub-attributes of one complex attribute. */
export type PathScope = ResourceAttributes | { sub: AttributeDefinition[] };

const byName = (defs: readonly AttributeDefinition[], name: string) => defs.find((d) => d.name.toLowerCase() === name.toLowerCase());

/**
 * @returns the resolved path, or a reason it does not resolve.
 */
export function resolvePath(scope: PathScope, path: string): ResolvedPath | string {
  let rest = path;
  let defs: readonly AttributeDefinition[];
  let keys: string[] = [];
  if ('sub' in scope) {
    defs = scope.sub;
  } else {
    defs = scope.attributes;
    for (const [urn, withIn, prefix] of [[scope.extension, scope.extensionAttributes, [scope.extension]], [scope.core, scope.attributes, []]] as const) {
      if (rest.toLowerCase().startsWith(`${urn.toLowerCase()}:`)) {
        rest = rest.slice(urn.length + 1);
        defs = withIn;
        keys = [...prefix];
        break;
      }
    }
  }
  const [name = '', sub, more] = rest.split('.');
  if (more !== undefined) return `'${path}' has more than one sub-attribute`;
  const def = byName(defs, name);
  if (!def) return `'${path}' is not an attribute of this resource type`;
  if (sub === undefined) return { keys: [...keys, def.name], def, multi: def.multiValued };
  const subDef = byName(def.subAttributes ?? [], sub);
  if (!subDef) return `'${path}' names no sub-attribute of ${def.name}`;
  return { keys: [...keys, def.name, subDef.name], def: subDef, multi: def.multiValued || subDef.multiValued };
}

/** The values at `keys`, multi-valued steps flattened; absent and null values are left out. */
export function valuesAt(resource: unknown, keys: readonly string[]): unknown[] {
  let current: unknown[] = [resource];
  for (const key of keys) {
    const next: unknown[] = [];
    for (const v of current) {
      if (v === null || typeof v !== 'object') continue;
      const child = (v as Record<string, unknown>)[key];
      if (Array.isArray(child)) next.push(...child);
      else if (child !== undefined && child !== null) next.push(child);
    }
    current = next;
  }
  return current;
}
