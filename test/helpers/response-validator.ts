/**
 * Issue 16, test 2: every answer a test receives is one its operation documents. startTestService registers
 * this plugin (production never does). For each answer of a documented route it checks that the status is
 * documented for the operation (5xx always is: the shared 5XX), that the media type is one documented for
 * that status, and that a JSON body validates against the documented schema (Ajv 8, no coercion, all
 * errors). The body is checked twice: as the handler returned it (in JSON form), because fast-json-stringify
 * coerces wrong types and fails with a 500 on a missing required property; and as sent, which must equal
 * the first — otherwise the response schema dropped or changed part of the answer (a lossy schema).
 *
 * Violations never change the answer; they are recorded, named by request, and flagged to the test helper
 * by the VIOLATION_HEADER, so `request()` throws in the test that received the answer and `close()` throws
 * for answers a test fetched some other way (curl, a browser, inject).
 */
import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import type { TSchema } from 'typebox';
import type { DocumentedExtras } from '../../src/kernel/openapi.ts';

/** Set on an answer that broke the contract: the indexes of its violations in `violations`. */
export const VIOLATION_HEADER = 'x-test-response-violation';

export interface Violation {
  method: string;
  url: string;
  /** The route's pattern, e.g. /jobs/:id: the operation. */
  route: string;
  status: number;
  problem: string;
}

export function describeViolation(v: Violation): string {
  return `${v.method} ${v.url.slice(0, 200)} (operation ${v.method} ${v.route}) answered ${v.status}: ${v.problem}`;
}

/** The route schema as the document builder reads it (src/app/openapi.ts). */
export interface RouteSchema {
  hide?: boolean;
  response?: Record<string, unknown>;
  documented?: DocumentedExtras;
}

/** What an operation documents for one status: media type → body schema (undefined: any body). Empty: no body. */
export type DocumentedAnswer = Map<string, TSchema | undefined>;

/** Fastify's and OpenAPI's forms of a plain response entry: a schema, or `{ content: { type: { schema } } }`. */
function plainAnswer(entry: unknown): DocumentedAnswer {
  const e = entry as { type?: unknown; content?: Record<string, { schema?: TSchema }> };
  if (e.type === undefined && e.content && typeof e.content === 'object') return new Map(Object.entries(e.content).map(([type, c]) => [type, c.schema]));
  // `type: null` documents an empty answer (a 204, or a redirect).
  return e.type === 'null' ? new Map() : new Map([['application/json', entry as TSchema]]);
}

/**
 * The documented answer for `status`, looked up as Fastify and OpenAPI do: the exact status, then its
 * range (2xx, 2XX), then `default`; `documented.responses` extras override a plain response schema.
 */
export function documentedAnswer(schema: RouteSchema, status: number): DocumentedAnswer | undefined {
  const range = String(status)[0];
  for (const key of [String(status), `${range}xx`, `${range}XX`, 'default']) {
    const extra = schema.documented?.responses?.[key as unknown as number];
    if (extra) return new Map(Object.entries(extra.content ?? {}));
    const plain = schema.response?.[key];
    if (plain) return plainAnswer(plain);
  }
  return undefined;
}

const isJson = (type: string) => type === 'application/json' || type.endsWith('+json');

/** The documented media type an actual one falls under (exact, or a `text/*` or `*\/*` range). */
function matchingType(answer: DocumentedAnswer, actual: string): string | undefined {
  if (answer.has(actual)) return actual;
  const range = `${actual.split('/')[0]}/*`;
  return answer.has(range) ? range : answer.has('*/*') ? '*/*' : undefined;
}

/** Up to five JSON pointers where `sent` differs from what the handler returned. */
function differences(returned: unknown, sent: unknown, at = '', found: string[] = []): string[] {
  if (found.length >= 5 || isDeepStrictEqual(returned, sent)) return found;
  const objects = returned !== null && sent !== null && typeof returned === 'object' && typeof sent === 'object';
  if (!objects || Array.isArray(returned) !== Array.isArray(sent)) {
    found.push(`${at || '/'} ${sent === undefined ? 'dropped' : `${JSON.stringify(returned)?.slice(0, 60)} became ${JSON.stringify(sent).slice(0, 60)}`}`);
    return found;
  }
  const keys = new Set([...Object.keys(returned), ...Object.keys(sent)]);
  for (const k of keys) differences((returned as Record<string, unknown>)[k], (sent as Record<string, unknown>)[k], `${at}/${k}`, found);
  return found;
}

// ajv-formats is CommonJS: under ESM its default export is the function itself.
const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;

/** Formats the project's schemas use as annotations for the document only (OpenAPI's `password`, PEM, DER, JWK). */
const ANNOTATION_FORMATS = ['password', 'pem', 'der', 'jwk', 'binary', 'byte'];

export interface ResponseValidator {
  plugin: (app: FastifyInstance) => Promise<void>;
  violations: Violation[];
  /** Checks one answer outside Fastify (the validator's own tests): the problems found, if any. */
  check(schema: RouteSchema, status: number, contentType: string | undefined, body: unknown): string[];
}

export function responseValidator(): ResponseValidator {
  // strict: false — TypeBox and the document add keywords Ajv does not know (contentMediaType, x-…).
  const ajv = new Ajv({ strict: false, allErrors: true, coerceTypes: false, useDefaults: false, removeAdditional: false, addUsedSchema: false });
  addFormats(ajv);
  for (const f of ANNOTATION_FORMATS) ajv.addFormat(f, true);
  const compiled = new WeakMap<object, ValidateFunction>();
  const validate = (schema: TSchema, body: unknown): string | undefined => {
    let v = compiled.get(schema);
    if (!v) compiled.set(schema, (v = ajv.compile(schema)));
    if (v(body)) return undefined;
    return `the body does not match its schema: ${ajv.errorsText(v.errors, { dataVar: 'body' }).slice(0, 600)}; body: ${JSON.stringify(body)?.slice(0, 300)}`;
  };

  /** Status and media type; then the body, unless `returned` (the handler's answer) was checked already. */
  const check = (schema: RouteSchema, status: number, contentType: string | undefined, body: unknown, returned?: { json: unknown } | null): string[] => {
    if (status >= 500) return [];
    const answer = documentedAnswer(schema, status);
    if (!answer) return [`status ${status} is not documented for this operation`];
    const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
    const empty = body === undefined || body === null || body === '' || (Buffer.isBuffer(body) && body.length === 0);
    if (answer.size === 0) return empty ? [] : [`status ${status} is documented without a body, but one was sent (${type || 'no Content-Type'})`];
    if (!type) return empty && status === 304 ? [] : [`status ${status} has a body without a Content-Type (documented: ${[...answer.keys()].join(', ')})`];
    const documentedType = matchingType(answer, type);
    if (!documentedType) return [`status ${status} answered ${type}, documented: ${[...answer.keys()].join(', ')}`];
    const bodySchema = answer.get(documentedType);
    if (!isJson(type) || !bodySchema || typeof body === 'object' && body !== null && !Buffer.isBuffer(body)) return []; // streams
    let sent: unknown;
    try {
      sent = JSON.parse(String(body));
    } catch {
      return [`status ${status} is documented as ${type} but the body is not JSON: ${String(body).slice(0, 100)}`];
    }
    if (returned === null) return []; // reported before serialization
    if (!returned) return [validate(bodySchema, sent)].filter((p) => p !== undefined);
    const changed = differences(returned.json, sent);
    return changed.length === 0 ? [] : [`the response schema changed the answer (the serializer drops properties the schema omits, coerces types): ${changed.join('; ')}`];
  };

  const violations: Violation[] = [];
  // Per request: the handler's answer in JSON form once checked before serialization (null: it was invalid); the violations found.
  const returned = new WeakMap<FastifyRequest, { json: unknown } | null>();
  const found = new WeakMap<FastifyRequest, number[]>();

  const documentedRoute = (request: FastifyRequest): RouteSchema | undefined => {
    const schema = request.routeOptions.schema as RouteSchema | undefined;
    // Unknown routes (the 404 handler) and routes left out of the document (hide) are not operations; a
    // documented route without a schema documents no answer of its own.
    return request.routeOptions.url && !schema?.hide ? (schema ?? {}) : undefined;
  };
  const record = (request: FastifyRequest, reply: FastifyReply, problems: string[]) => {
    for (const problem of problems) {
      const list = found.get(request) ?? [];
      found.set(request, [...list, violations.length]);
      violations.push({ method: request.method, url: request.url, route: request.routeOptions.url ?? '', status: reply.statusCode, problem });
    }
  };
  const guarded = (request: FastifyRequest, reply: FastifyReply, run: () => string[]) => {
    try {
      record(request, reply, run());
    } catch (err) {
      record(request, reply, [`the response validator failed: ${(err as Error).message}`]);
    }
  };

  const plugin = fp(async (app: FastifyInstance) => {
    // An object Fastify is about to serialize as JSON: check it as returned, before the serializer shapes it.
    app.addHook('preSerialization', async (request, reply, payload) => {
      const schema = documentedRoute(request);
      const type = String(reply.getHeader('content-type') ?? 'application/json').split(';')[0]!.trim();
      if (!schema || reply.statusCode >= 500 || !isJson(type)) return payload;
      guarded(request, reply, () => {
        const json: unknown = JSON.parse(JSON.stringify(payload) ?? 'null');
        const bodySchema = documentedAnswer(schema, reply.statusCode)?.get(type);
        if (!bodySchema) return []; // an undocumented status or type is reported once, on send
        const problem = validate(bodySchema, json);
        // A valid answer is compared with what is sent; an invalid one is reported once, here.
        returned.set(request, problem ? null : { json });
        return problem ? [problem] : [];
      });
      return payload;
    });
    app.addHook('onSend', async (request, reply, payload) => {
      const schema = documentedRoute(request);
      if (schema) guarded(request, reply, () => check(schema, reply.statusCode, reply.getHeader('content-type') as string | undefined, payload, returned.get(request)));
      const mine = found.get(request);
      if (mine) reply.header(VIOLATION_HEADER, mine.join(','));
      return payload;
    });
  });
  return { plugin, violations, check: (schema, status, contentType, body) => check(schema, status, contentType, body) };
}
