/**
 * Integers in paths and queries as people write them. The schema validator would coerce `0x10`, `1e3`
 * or ` 7` into numbers; a parameter its schema types as an integer must instead be plain decimal text
 * within the schema's bounds, and the 400 says which parameter, in the words of its description.
 */
import type { FastifyRequest } from 'fastify';
import { InvalidRequest } from './errors.ts';

interface IntegerSchema {
  type?: unknown;
  minimum?: number;
  maximum?: number;
  description?: string;
  items?: IntegerSchema;
}

const DECIMAL = /^-?(0|[1-9][0-9]{0,15})$/;

function check(name: string, text: string, schema: IntegerSchema): void {
  const what = schema.description ?? 'an integer';
  if (!DECIMAL.test(text)) throw new InvalidRequest(`${name}: '${text}' is not ${what}`);
  const n = Number(text);
  const { minimum = Number.MIN_SAFE_INTEGER, maximum = Number.MAX_SAFE_INTEGER } = schema;
  if (n < minimum || n > maximum) throw new InvalidRequest(`${name}: must be from ${minimum} to ${maximum}, got ${text}`);
}

function checkAll(values: unknown, properties: Record<string, IntegerSchema> | undefined): void {
  if (!properties || !values || typeof values !== 'object') return;
  for (const [name, raw] of Object.entries(values as Record<string, unknown>)) {
    const schema = properties[name];
    if (!schema) continue;
    const itemSchema = schema.type === 'array' ? schema.items : schema;
    if (itemSchema?.type !== 'integer') continue;
    for (const v of Array.isArray(raw) ? raw : [raw]) if (typeof v === 'string') check(name, v, itemSchema);
  }
}

/** A preValidation step: refuses integer path and query parameters that are not canonical decimal text. */
export function refuseLooseIntegers(request: FastifyRequest): void {
  const schema = request.routeOptions.schema as { params?: { properties?: Record<string, IntegerSchema> }; querystring?: { properties?: Record<string, IntegerSchema> } } | undefined;
  checkAll(request.params, schema?.params?.properties);
  checkAll(request.query, schema?.querystring?.properties);
}
