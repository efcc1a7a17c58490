/**
 * `/openapi-3.0.json`: the contract down-converted to OpenAPI 3.0 for the generators that read 3.0 only
 * (OpenAPI Generator 4.x and many others). @apiture/openapi-down-convert does the conversion; the
 * `mutualTLS` scheme, which 3.0 lacks (the generator stops on it with a NullPointerException) and which
 * lives at the TLS layer anyway, is dropped from the schemes and from every security requirement.
 */
import { Converter } from '@apiture/openapi-down-convert';

type Requirement = Record<string, string[]>;
type Operation = { security?: Requirement[] };
type Document30 = {
  components?: { securitySchemes?: Record<string, { type: string }> };
  security?: Requirement[];
  paths: Record<string, Record<string, Operation | unknown>>;
};

/**
 * The converter takes any key named `schemas` for a map of schemas (as components.schemas is), so a
 * property of that name (SCIM's resources have one, RFC 7643 §3) is renamed around the conversion.
 */
const SCHEMAS = 'schemas';
const HIDDEN = 'x-dirigo-property-schemas';

function renameProperty(node: unknown, from: string, to: string): void {
  if (Array.isArray(node)) {
    for (const item of node) renameProperty(item, from, to);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const schema = node as { properties?: Record<string, unknown>; required?: unknown };
  if (schema.properties && typeof schema.properties === 'object' && from in schema.properties) {
    schema.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k === from ? to : k, v]));
    if (Array.isArray(schema.required)) schema.required = schema.required.map((k) => (k === from ? to : k));
  }
  for (const value of Object.values(node)) renameProperty(value, from, to);
}

/** The OpenAPI 3.1 document `doc31` as OpenAPI 3.0, without mutual TLS; `doc31` is left as it was. */
export function toOpenApi30(doc31: object): Document30 {
  const input = structuredClone(doc31);
  renameProperty(input, SCHEMAS, HIDDEN);
  const doc = new Converter(input).convert() as Document30;
  renameProperty(doc, HIDDEN, SCHEMAS);
  const schemes = doc.components?.securitySchemes ?? {};
  const mtls = new Set(Object.keys(schemes).filter((name) => schemes[name]!.type === 'mutualTLS'));
  for (const name of mtls) delete schemes[name];
  // A requirement that named only mutual TLS goes: a client presents its certificate at the TLS layer.
  const strip = (reqs: Requirement[]): Requirement[] =>
    reqs
      .filter((r) => Object.keys(r).length === 0 || Object.keys(r).some((name) => !mtls.has(name)))
      .map((r) => Object.fromEntries(Object.entries(r).filter(([name]) => !mtls.has(name))));
  if (doc.security) doc.security = strip(doc.security);
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item)) {
      if (op && typeof op === 'object' && (op as Operation).security) (op as Operation).security = strip((op as Operation).security!);
    }
  }
  return doc;
}
