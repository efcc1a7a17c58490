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
