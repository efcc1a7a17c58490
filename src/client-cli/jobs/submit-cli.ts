/**
 * `dirigo jobs submit` with local input files: they are packed into one tar.gz here and uploaded by the
 * direct path (docs/sandboxes.md: POST /sandboxes, a PUT to the presigned URL unless the service has the
 * same bytes already), and the jobs are submitted naming it (InputSandboxRef). A service without
 * POST /sandboxes (older) gets the files in a multipart POST /jobs, as before. Either way local
 * InputSandbox files are uploaded (DiracX issue 918 is a client that did not).
 */
import { createHash } from 'node:crypto';
import { createWriteStream, openAsBlob, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DirectPathUnsupported, DirigoApiError, submissionFormData, uploadSandbox, type DirigoClient, type JobSubmissionForm, type SandboxDigest } from '@dirigo/client';
import { answer, refusal, unreachable, type Connection } from '../shared/http.ts';
import { CliError, EXIT, progress } from '../../terminal/output.ts';
import { fileNameProblem } from '../../protocol/file-names.ts';
import { JDL_MEDIA_TYPE } from '../../protocol/jdl.ts';
import { describeSkipped, packFiles, type SkippedFile } from '../../payload/sandbox-archive.ts';

/** Below this, an upload is quick: no progress is shown. */
const PROGRESS_FROM_BYTES = 8 * 1024 * 1024;

/** What to submit: a JDL's text, or the manifests (one object or an array) of a JSON file. */
export type Submission = { jdl: string } | { manifests: unknown[] };

/** The local files, each under the name it has in the job's working directory (its base name). */
function namedFiles(files: readonly string[]): { name: string; path: string }[] {
  const seen = new Map<string, string>();
  return files.map((f) => {
    const name = basename(f);
    const problem = fileNameProblem(name);
    if (problem) throw new CliError(`file name '${name}' ${problem}`, EXIT.usage);
    const path = resolve(f);
    const other = seen.get(name);
    if (other !== undefined && other !== path) throw new CliError(`two input files are named '${name}' (${other} and ${path}): the job's working directory holds one`, EXIT.usage);
    seen.set(name, path);
    try {
      if (!statSync(path).isFile()) throw new CliError(`input file ${f} is not a regular file`, EXIT.usage);
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(`cannot read input file ${f}: ${(err as Error).message}`, EXIT.usage);
    }
    return { name, path };
  }).filter((f, i, all) => all.findIndex((g) => g.name === f.name) === i);
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The files packed into `archive` (one tar.gz, the project's packing), with its sha256 and size. */
async function pack(files: readonly { name: string; path: string }[], archive: string): Promise<SandboxDigest> {
  const hash = createHash('sha256');
  let size = 0;
  const skipped: SkippedFile[] = [];
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  await pipeline(packFiles(files, { onSkip: (s) => skipped.push(s) }), count, createWriteStream(archive, { mode: 0o600 }));
  if (skipped.length > 0) throw new CliError(`cannot pack the input sandbox: ${describeSkipped(skipped)}`, EXIT.usage);
  return { sha256: hash.digest('hex'), size };
}

/** `text` with `InputSandboxRef = "<ref>";` as its first attribute (inside its brackets when it has them). */
function jdlWithRef(text: string, ref: string): string {
  const line = `InputSandboxRef = "${ref}";`;
  const opening = /^(\s*(?:(?:#|\/\/)[^\n]*\n\s*)*)\[/.exec(text);
  return opening ? `${opening[0]}\n  ${line}${text.slice(opening[0].length)}` : `${line}\n${text}`;
}

/** Uploads the packed files by the direct path; undefined when the service has no POST /sandboxes. */
async function uploadDirect(conn: Connection, client: DirigoClient, files: readonly { name: string; path: string }[], json: boolean): Promise<string | undefined> {
  const dir = await mkdtemp(join(tmpdir(), 'dirigo-submit-'));
  try {
    const archive = join(dir, 'input-sandbox.tar.gz');
    const digest = await pack(files, archive);
    const shown = digest.size >= PROGRESS_FROM_BYTES && !json ? progress() : undefined;
    try {
      const uploaded = await uploadSandbox(client, archive, {
        digest,
        onProgress: (sent, total) => shown?.update(`uploading the input sandbox: ${mib(sent)} of ${mib(total)} (${Math.floor((sent / total) * 100)}%)`),
      });
      const said = uploaded.existed ? `input sandbox ${uploaded.ref} (${digest.size} bytes) already on the service: nothing sent` : `input sandbox ${uploaded.ref} (${digest.size} bytes) uploaded to the store`;
      if (shown) shown.done(said);
      else if (conn.verbose) process.stderr.write(`dirigo: ${said}\n`);
      return uploaded.ref;
    } catch (err) {
      if (err instanceof DirectPathUnsupported) {
        if (conn.verbose) process.stderr.write('dirigo: the service has no POST /sandboxes: the files go in the submission (multipart)\n');
        return undefined;
      }
      if (err instanceof DirigoApiError) throw refusal(err.status, { error: err.error, error_description: err.description });
      throw unreachable(conn, err, 'cannot upload the input sandbox');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The files in a multipart POST /jobs (a service without the direct path). */
async function submitMultipart(conn: Connection, client: DirigoClient, submission: Submission, files: readonly { name: string; path: string }[]): Promise<{ jids: number[] }> {
  // File-backed Blobs: the upload streams them from disk.
  const inputs = await Promise.all(files.map(async (f) => new File([await openAsBlob(f.path)], f.name)));
  const form: JobSubmissionForm = 'jdl' in submission ? { jdl: [submission.jdl], files: inputs } : { manifest: submission.manifests.map((m) => JSON.stringify(m)), files: inputs };
  return answer(conn, client.POST('/jobs', { body: form, bodySerializer: () => submissionFormData(form) }));
}

/** The local input files packed and uploaded by the direct path: the reference and the names inside. */
export interface UploadedSandbox {
  ref: string;
  names: string[];
}

/** Uploads the local `paths` as one input sandbox; undefined when the service has no POST /sandboxes (older). */
export async function uploadLocalFiles(conn: Connection, client: DirigoClient, paths: readonly string[], json: boolean): Promise<UploadedSandbox | undefined> {
  const files = namedFiles(paths);
  const ref = await uploadDirect(conn, client, files, json);
  return ref === undefined ? undefined : { ref, names: files.map((f) => f.name) };
}

/** A manifest naming the uploaded sandbox; as a multipart submission does, it lists what the sandbox holds. */
export function withSandboxRef(manifest: unknown, sandbox: UploadedSandbox): Record<string, unknown> {
  return { ...(manifest as Record<string, unknown>), InputSandbox: sandbox.names, InputSandboxRef: sandbox.ref };
}

/** Submits the jobs with the local `files` as their input sandbox: by the direct path, else multipart. */
export async function submitWithLocalFiles(conn: Connection, client: DirigoClient, submission: Submission, paths: readonly string[], json: boolean): Promise<{ jids: number[] }> {
  const files = namedFiles(paths);
  const ref = await uploadDirect(conn, client, files, json);
  if (ref === undefined) return submitMultipart(conn, client, submission, files);
  if ('jdl' in submission) {
    const text = jdlWithRef(submission.jdl, ref);
    return answer(conn, client.POST('/jobs', { body: text as never, headers: { 'content-type': JDL_MEDIA_TYPE }, bodySerializer: () => text }));
  }
  const sandbox = { ref, names: files.map((f) => f.name) };
  const manifests = submission.manifests.map((m) => withSandboxRef(m, sandbox));
  const body = manifests.length === 1 ? manifests[0] : manifests;
  return answer(conn, client.POST('/jobs', { body: body as never }));
}
