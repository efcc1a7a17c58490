/** One HTTPS request as the tests see it: status, headers, raw body, text and JSON (when it parses). */
import { request, type Dispatcher } from 'undici';

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface SendOptions {
  method?: Dispatcher.HttpMethod;
  headers?: Record<string, string>;
  body?: string | Buffer;
  json?: unknown;
  token?: string;
}

export async function send(url: string, options: SendOptions, dispatcher: Dispatcher): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const res = await request(url, { method: options.method ?? 'GET', headers, body, dispatcher });
  const buf = Buffer.from(await res.body.arrayBuffer());
  const text = buf.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body: buf, text, json };
}
