/**
 * Issue 16, test 2: every answer a test receives must be one its operation documents. Registered by
 * startTestService (never in production), it checks each answer as it is sent: its status is documented
 * for the operation (5xx is the shared 5XX), its media type is one documented for that status, and a JSON
 * body validates against the documented schema (strict Ajv, no coercion). Violations are collected and
 * make the service's close() throw, naming each request.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import type { TSchema } from 'typebox';
import type { DocumentedExtras } from '../../src/kernel/openapi.ts';

type RouteSchema = { hide?: boolean; response?: Record<string, TSchema>; documented?: DocumentedExtras };

/** What the operation documents for one status: media type → schema (undefined: any body of that type). */
type Expected = Map<string, TSchema | undefined>;

// ajv-formats is CommonJS: its default export is the function.
const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;

function expectedFor(schema: RouteSchema, status: number): Expected | undefined {
  const key = [String(status), `${String(status)[0]}xx`, `${String(status)[0]}XX`, 'default'];
  const documented = schema.documented?.responses;
  for (const k of key) {
    const extra = documented?.[k as unknown as number];
    if (extra) return new Map(Object.entries(extra.content ?? {}).map(([type, s]) => [type, s]) as [string, TSchema | undefined][]);
    const plain = schema.response?.[k];
    // A response schema of `type: null` documents an empty answer.
    if (plain) return (plain as { type?: unknown }).type === 'null' ? new Map() : new Map([['application/json', plain]]);
  }
  return undefined;
}

export interface ResponseValidator {
  plugin: (app: FastifyInstance) => Promise<void>;
  violations: string[];
}

export function responseValidator(): ResponseValidator {
  const ajv = new Ajv({ strict: false, allErrors: true, coerceTypes: false, addUsedSchema: false });
  addFormats(ajv);
  const compiled = new WeakMap<object, ValidateFunction>();
  const validatorOf = (schema: TSchema) => {
    let v = compiled.get(schema);
    if (!v) compiled.set(schema, (v = ajv.compile(schema)));
    return v;
  };
  const violations: string[] = [];

  // Bodies checked before serialization: the serializer would turn a wrong type into a right one.
  const checkedEarly = new WeakSet<FastifyRequest>();

  const check = (request: FastifyRequest, reply: FastifyReply, payload: unknown, serialized: boolean): string | undefined => {
    const schema = request.routeOptions.schema as RouteSchema | undefined;
    // Unknown routes (the 404 handler) and routes left out of the document are not operations.
    if (!request.routeOptions.url || !schema || schema.hide) return undefined;
    const status = reply.statusCode;
    if (status >= 500) return undefined;
    const expected = expectedFor(schema, status);
    if (!expected) return `status ${status} is not documented`;
    // Before serialization an object answer is JSON whether or not its Content-Type is set yet.
    const type = String(reply.getHeader('content-type') ?? (serialized ? '' : 'application/json')).split(';')[0]!.trim().toLowerCase();
    if (expected.size === 0) return payload === undefined || payload === null || payload === '' || type === '' ? undefined : `status ${status} is documented without a body, got ${type}`;
    if (!type) return status === 304 ? undefined : `status ${status} has no Content-Type`;
    if (!expected.has(type)) return `status ${status} answers ${type}, documented: ${[...expected.keys()].join(', ')}`;
    const bodySchema = expected.get(type);
    if (type !== 'application/json' || !bodySchema || checkedEarly.has(request)) return undefined;
    let body = payload;
    if (serialized) {
      if (typeof payload !== 'string') return undefined;
      try {
        body = JSON.parse(payload);
      } catch {
        return `status ${status} is not JSON`;
      }
    } else checkedEarly.add(request);
    const validate = validatorOf(bodySchema);
    return validate(body) ? undefined : `status ${status} body ${ajv.errorsText(validate.errors)}: ${JSON.stringify(body).slice(0, 300)}`;
  };

  const record = (request: FastifyRequest, reply: FastifyReply, payload: unknown, serialized: boolean) => {
    let problem: string | undefined;
    try {
      problem = check(request, reply, payload, serialized);
    } catch (err) {
      problem = `the validator failed: ${(err as Error).message}`;
    }
    if (problem) violations.push(`${request.method} ${request.url} (${request.routeOptions.url}): ${problem}`);
  };
  const plugin = fp(async (app: FastifyInstance) => {
    app.addHook('preSerialization', async (request, reply, payload) => {
      // Only objects about to become JSON; a status or media type problem is reported once, on send.
      if (payload !== null && typeof payload === 'object' && !Buffer.isBuffer(payload) && String(reply.getHeader('content-type') ?? 'application/json').startsWith('application/json')) {
        const before = violations.length;
        record(request, reply, payload, false);
        if (violations.length > before && !/ body /.test(violations.at(-1)!)) violations.pop();
      }
      return payload;
    });
    app.addHook('onSend', async (request, reply, payload) => {
      record(request, reply, payload, true);
      return payload;
    });
  });
  return { plugin, violations };
}
