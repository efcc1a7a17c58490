/**
 * The client itself: an openapi-fetch client of the document's paths over an undici dispatcher, its
 * error answers as DirigoApiError, and the query serialisation the service reads.
 */
import createClient, { createQuerySerializer, type Client } from 'openapi-fetch';
import { Agent, type Dispatcher } from 'undici';
import type { components, paths } from './schema.ts';

/** The shared error answer of every operation (`components.schemas.Error`). */
export type ErrorAnswer = components['schemas']['Error'];

export interface DirigoClientOptions {
  /** The service's base URL, `https://host:port`. */
  url: string;
  /** An access token, or a function giving the current one (called before every request). */
  token?: string | (() => string | undefined | Promise<string | undefined>);
  /** PEM CA certificates to trust instead of the system's. */
  ca?: string | Buffer | (string | Buffer)[];
  /** A client certificate (or RFC 3820 proxy chain) and its key, for flow A and mutual TLS. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** An undici dispatcher to use instead of one built from `ca`, `cert` and `key`. */
  dispatcher?: Dispatcher;
}

/** A typed client of the whole API; its dispatcher is closed with `close()`. */
export type DirigoClient = Client<paths> & { readonly url: string; readonly dispatcher: Dispatcher; close(): Promise<void> };

/** A non-2xx answer: its status and the service's `error`, `error_description` and `request_id`. */
export class DirigoApiError extends Error {
  readonly status: number;
  readonly error: string;
  readonly description: string;
  readonly requestId: string | undefined;
  /** A 413's limit: its bytes (or count), readably, and the configuration key that sets it. */
  readonly limit: ErrorAnswer['limit'];
  constructor(status: number, body: Partial<ErrorAnswer> | undefined) {
    const error = body?.error ?? `http_${status}`;
    const description = body?.error_description ?? '';
    super(`HTTP ${status} ${error}${description ? `: ${description}` : ''}`);
    this.name = 'DirigoApiError';
    this.status = status;
    this.error = error;
    this.description = description;
    this.requestId = body?.request_id;
    this.limit = body?.limit;
  }
}

const serializeOthers = createQuerySerializer({ object: { style: 'form', explode: true } });

/**
 * The query string. Objects (the catalogue's metadata conditions) are one parameter per key (form,
 * explode), and a list value is its key repeated, as a form-exploded array is: `{conditions: {Run:
 * ['>=|5', '<|10']}}` gives `Run=%3E%3D%7C5&Run=%3C%7C10`, a range. (openapi-fetch would join the list
 * with commas, which the service reads as one value.)
 */
export function serializeQuery(query: Record<string, unknown>): string {
  const parts: string[] = [];
  const rest: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      rest[name] = value;
      continue;
    }
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      for (const item of Array.isArray(v) ? v : [v]) if (item !== undefined && item !== null) parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(item))}`);
    }
  }
  const others = serializeOthers(rest);
  return [...parts, ...(others ? [others] : [])].join('&');
}

/**
 * Creates a client. Requests go through undici with the given trust and identity.
 * @example
 * ```ts
 * const dirigo = createDirigoClient({ url, ca: readFileSync('ca.crt'), token: () => cache.current() });
 * const job = unwrap(await dirigo.GET('/jobs/{jid}', { params: { path: { jid: 42 } } }));
 * ```
 */
export function createDirigoClient(options: DirigoClientOptions): DirigoClient {
  const url = options.url.replace(/\/$/, '');
  const dispatcher = options.dispatcher ?? new Agent({ connect: { ca: options.ca, cert: options.cert, key: options.key } });
  // openapi-fetch passes a Request; Node's fetch takes the undici dispatcher beside it.
  const fetchWith = (request: Request) => fetch(request, { dispatcher } as RequestInit);
  const client = createClient<paths>({ baseUrl: url, fetch: fetchWith, querySerializer: serializeQuery });
  const { token } = options;
  if (token !== undefined) {
    client.use({
      async onRequest({ request }) {
        const value = typeof token === 'function' ? await token() : token;
        // RFC 6750 §2.1; a caller's own Authorization header wins.
        if (value && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${value}`);
        return request;
      },
    });
  }
  return Object.assign(client, {
    url,
    dispatcher,
    close: async () => {
      if (!options.dispatcher) await dispatcher.close();
    },
  });
}

/**
 * The data of a successful call, or a DirigoApiError.
 * @example
 * ```ts
 * const { jids } = unwrap(await dirigo.POST('/jobs', { body: { Executable: '/bin/true' } }));
 * ```
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok && result.error === undefined) return result.data as T;
  throw new DirigoApiError(result.response.status, result.error as Partial<ErrorAnswer> | undefined);
}

