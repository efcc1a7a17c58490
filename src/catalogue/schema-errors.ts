/**
 * The catalogue's words for what its body schemas refuse: the first problem, named by its key, as the
 * hand-written checks before them named it (an unknown key, a missing one, a mode that is not one).
 * TypeBox reports a union's failure as each branch's error followed by the union's own; the union is
 * then described once, by its schema's description or by the types it takes.
 */
import type { FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { InvalidRequest } from '../kernel/errors.ts';

/** The sub-schema at a TypeBox error's schemaPath (`#/properties/Mode`), if it is a plain path. */
function schemaAt(root: TSchema, path: string): Record<string, unknown> | undefined {
  let node: unknown = root;
  for (const part of path.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    node = node && typeof node === 'object' ? (node as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  }
  return node && typeof node === 'object' ? (node as Record<string, unknown>) : undefined;
}

function describeUnion(root: TSchema, union: FastifySchemaValidationError, branches: FastifySchemaValidationError[]): string {
  const description = schemaAt(root, union.schemaPath)?.description;
  if (typeof description === 'string') return `must be ${description}`;
  const types = branches.map((e) => (e.params as { type?: unknown }).type);
  if (types.every((t) => typeof t === 'string')) return `must be ${[...new Set(types)].join(' or ')}`;
  return branches[0]?.message ?? 'is invalid';
}

/** A schemaErrorFormatter for routes whose body is `root`; `hint` says what a body must look like. */
export function bodyErrors(root: TSchema, hint: string): (errors: FastifySchemaValidationError[], dataVar: string) => Error {
  return (errors, dataVar) => {
    const first = errors.find((e) => e.keyword !== 'boolean') ?? errors[0]!;
    const where = `${dataVar}${first.instancePath.replace(/\//g, '.')}`;
    const params = first.params as { additionalProperties?: string[]; requiredProperties?: string[] };
    if (first.keyword === 'additionalProperties') return new InvalidRequest(`${dataVar}: unknown key ${JSON.stringify(params.additionalProperties?.[0])}${first.instancePath ? ` in ${where}` : ''}`);
    if (first.keyword === 'required') {
      const names = params.requiredProperties ?? [];
      return new InvalidRequest(`${where}: ${names.join(', ')} ${names.length > 1 ? 'are' : 'is'} required`);
    }
    if (first.instancePath === '' && first.keyword === 'type') return new InvalidRequest(`${dataVar} must be a JSON object ${hint}`);
    // The branches of a union precede the union's own error, at the same instance path.
    const union = errors.find((e) => e.keyword === 'anyOf' && e.instancePath === first.instancePath);
    if (union) return new InvalidRequest(`${where} ${describeUnion(root, union, errors.filter((e) => e !== union && e.instancePath === first.instancePath))}`);
    return new InvalidRequest(`${where} ${first.message ?? 'is invalid'}`);
  };
}
