/** curl, the client grid users reach for first, against a test service: status and JSON body. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestService } from './service.ts';

const run = promisify(execFile);

/** GETs `path` with curl, presenting `cred` (a certificate or proxy file and its key) when given. */
export async function curlJson<T = Record<string, unknown>>(svc: TestService, path: string, cred?: { certFile: string; keyFile: string }): Promise<{ status: number; body: T }> {
  const args = ['-s', '-w', '\n%{http_code}', '--cacert', svc.pki.caFile];
  if (cred) args.push('--cert', cred.certFile, '--key', cred.keyFile);
  const { stdout } = await run('curl', [...args, svc.url + path]);
  const nl = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(nl + 1)), body: JSON.parse(stdout.slice(0, nl)) as T };
}

export interface CurlOptions {
  method?: string;
  /** An access token, sent as `Authorization: Bearer` (RFC 6750 §2.1). */
  token?: string;
  /** A form body (application/x-www-form-urlencoded). */
  form?: Record<string, string>;
  /** `-u id:secret`: HTTP Basic client authentication. */
  basic?: string;
}

/** Any request with curl: status and JSON body (undefined for an empty one, such as a 204's). */
export async function curl<T = Record<string, unknown>>(svc: TestService, path: string, options: CurlOptions = {}): Promise<{ status: number; body: T }> {
  const args = ['-s', '-w', '\n%{http_code}', '--cacert', svc.pki.caFile, '-X', options.method ?? (options.form ? 'POST' : 'GET')];
  if (options.token !== undefined) args.push('--oauth2-bearer', options.token);
  if (options.basic !== undefined) args.push('-u', options.basic);
  for (const [k, v] of Object.entries(options.form ?? {})) args.push('--data-urlencode', `${k}=${v}`);
  const { stdout } = await run('curl', [...args, svc.url + path]);
  const nl = stdout.lastIndexOf('\n');
  const text = stdout.slice(0, nl);
  return { status: Number(stdout.slice(nl + 1)), body: (text ? JSON.parse(text) : undefined) as T };
}
