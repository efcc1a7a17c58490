/**
 * Sandboxes by the direct path in the browser (docs/sandboxes.md). Uploads: the chosen files are packed
 * here into one tar.gz (sandbox-pack.ts), hashed by Web Crypto, announced with POST /sandboxes and PUT
 * to the presigned URL the service answers, unless it has the same bytes already. Downloads ask for the
 * JSON form and fetch the presigned URL.
 *
 * With the S3 store the presigned URLs are on the bucket's origin, not the application's: the bucket
 * needs a CORS rule allowing this origin the methods PUT and GET and the headers the upload signs
 * (`x-amz-checksum-sha256`, `content-type`), and exposing `ETag` (docs/sandboxes.md, "The clients"). The file
 * store's URLs are on the service itself: same origin, nothing to configure.
 */
import { authorizedFetch, ApiError } from '../api.ts';
import { packSandbox } from './sandbox-pack.ts';

async function refusal(res: Response): Promise<ApiError> {
  const e = (await res.json().catch(() => ({}))) as { error?: string; error_description?: string };
  return new ApiError(res.status, e.error ?? 'error', e.error_description ?? `the server answered ${res.status}`);
}

/**
 * Uploads the files as one sandbox by the direct path; its reference (`sha256:<hex>`) for the manifests'
 * InputSandboxRef, or undefined when the service has no POST /sandboxes (older: submit them multipart).
 */
export async function uploadSandbox(files: readonly File[]): Promise<string | undefined> {
  const { archive, sha256 } = await packSandbox(files);
  const announce = new Request('/sandboxes', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ sha256, size: archive.size }),
  });
  const res = await authorizedFetch(announce);
  if (res.status === 404 || res.status === 405) return undefined;
  if (!res.ok) throw await refusal(res);
  const answer = (await res.json()) as { exists: boolean; upload?: { url: string; method: string; headers?: Record<string, string> } };
  if (!answer.exists && answer.upload) {
    // A presigned URL carries its own authorisation: no bearer token goes with it.
    const put = await fetch(new URL(answer.upload.url, location.origin), { method: 'PUT', headers: answer.upload.headers ?? {}, body: archive });
    if (!put.ok) throw new ApiError(put.status, 'upload_refused', `the sandbox store refused the upload (HTTP ${put.status})`);
  }
  return `sha256:${sha256}`;
}

/** `jdl` with `InputSandboxRef = "<ref>";` as its first attribute (inside its brackets when it has them). */
export function jdlWithRef(jdl: string, ref: string): string {
  const line = `InputSandboxRef = "${ref}";`;
  const opening = /^(\s*(?:(?:#|\/\/)[^\n]*\n\s*)*)\[/.exec(jdl);
  return opening ? `${opening[0]}\n  ${line}${jdl.slice(opening[0].length)}` : `${line}\n${jdl}`;
}

/**
 * A job's sandbox as a response holding its bytes: the JSON form's presigned URL is fetched (the store
 * answers; no token goes there), a service that answers the bytes itself is read as it is.
 */
export async function sandboxResponse(jid: number, which: 'inputsandbox' | 'outputsandbox'): Promise<Response> {
  const res = await authorizedFetch(new Request(`/jobs/${jid}/${which}`, { headers: { accept: 'application/json, application/gzip;q=0.9' } }));
  if (!res.ok || !/^application\/json\b/.test(res.headers.get('content-type') ?? '')) return res;
  const { url } = (await res.json()) as { url: string };
  return fetch(new URL(url, location.origin));
}

/**
 * Saves a job's sandbox as a download: with the JSON form, the browser is sent to the presigned URL
 * (a navigation: no CORS rule is needed), otherwise the answer's bytes are saved.
 */
export async function sandboxDownloadUrl(jid: number, which: 'inputsandbox' | 'outputsandbox'): Promise<string | Response> {
  const res = await authorizedFetch(new Request(`/jobs/${jid}/${which}`, { headers: { accept: 'application/json, application/gzip;q=0.9' } }));
  if (!res.ok || !/^application\/json\b/.test(res.headers.get('content-type') ?? '')) return res;
  return new URL(((await res.json()) as { url: string }).url, location.origin).toString();
}
