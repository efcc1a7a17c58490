/**
 * POST /jobs bodies into checked manifests and an input sandbox. JSON bodies carry one manifest or an
 * array of them; JDL bodies one manifest; multipart bodies carry `manifest` (JSON) or `jdl` parts (one
 * manifest each) and file parts that join the input sandbox. Uploaded files are spooled under numbered names (a client's file name is never used as a
 * path), checked against the limits, then packed into one tar.gz and stored before any row is written.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { DirigoError, InvalidRequest, PayloadTooLarge } from '../kernel/errors.ts';
import { refuseDeepJson } from '../kernel/json-depth.ts';
import { refuseUnstorableText } from '../kernel/storable-text.ts';
import type { JobsConfig } from './config-schema.ts';
import { fileNameProblem } from '../protocol/file-names.ts';
import { parseJdl } from '../protocol/jdl.ts';
import { packFiles, type ArchiveFile } from '../payload/sandbox-archive.ts';
import type { SandboxStore, SizeLimit, StoredObject } from './sandbox-store.ts';

export interface ParsedSubmission {
  manifests: unknown[];
  /** The text of the other fields the caller accepts (POST /workflows: `workflow`), by name. */
  fields: Map<string, string>;
  fileNames: string[];
  /** Packs and stores the spooled files (call after the manifests are checked); undefined without files. */
  storeSandbox(): Promise<StoredObject | undefined>;
  /** Removes the spooled files. */
  cleanup(): Promise<void>;
}

export function manifestsFromJson(body: unknown, maxBulk: number): unknown[] {
  if (Array.isArray(body)) {
    if (body.length === 0) throw new InvalidRequest('body: the array of manifests is empty');
    if (body.length > maxBulk) throw new InvalidRequest(`body: at most ${maxBulk} manifests per submission, got ${body.length}`);
    return body;
  }
  if (typeof body === 'object' && body !== null) return [body];
  throw new InvalidRequest('body: must be a JSON object (a manifest) or an array of manifests');
}

async function readLimited(stream: Readable, limit: SizeLimit, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > limit.bytes) throw new PayloadTooLarge(what, limit);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function parseManifestText(text: string, index: number, jdl: boolean): unknown {
  let manifest: unknown;
  if (jdl) manifest = parseJdl(text, `jdl part ${index + 1}`);
  else {
    // Multipart parts bypass the JSON body parser (app.ts), and its depth check with it.
    refuseDeepJson(text, `manifest part ${index + 1}`);
    try {
      manifest = JSON.parse(text);
    } catch (err) {
      throw new InvalidRequest(`manifest part ${index + 1} is not valid JSON: ${(err as Error).message}`);
    }
  }
  // Multipart parts bypass the route's body check (app.ts): the same rule, here.
  refuseUnstorableText(manifest, `manifest part ${index + 1}`);
  return manifest;
}

/**
 * Reads a multipart submission, spooling its files; the caller stores the sandbox and cleans up. Fields
 * named in `extraFields` are handed back as text (once each), any other field is refused.
 */
export async function readMultipart(
  request: FastifyRequest,
  config: JobsConfig,
  store: SandboxStore,
  tmpDir: string,
  extraFields: readonly string[] = [],
): Promise<ParsedSubmission> {
  const limits = config.sandbox;
  // A manifest part may be as large as a JSON body (the multipart field size is set to it: routes.ts).
  const manifestLimit: SizeLimit = { bytes: config.jsonBodyLimit, setting: 'jobs.jsonBodyLimit' };
  const fileLimit: SizeLimit = { bytes: limits.maxFileSize, setting: 'jobs.sandbox.maxFileSize' };
  const sandboxLimit: SizeLimit = { bytes: limits.maxSandboxSize, setting: 'jobs.sandbox.maxSandboxSize' };
  const spool = join(tmpDir, `upload-${randomBytes(8).toString('hex')}`);
  const manifests: unknown[] = [];
  const files: ArchiveFile[] = [];
  const names = new Set<string>();
  const fields = new Map<string, string>();
  let total = 0;
  const cleanup = () => rm(spool, { recursive: true, force: true });
  try {
    try {
      for await (const part of request.parts()) {
        if (part.fieldname === 'manifest' || part.fieldname === 'jdl') {
          const jdl = part.fieldname === 'jdl';
          if (manifests.length >= config.maxBulk) throw new InvalidRequest(`at most ${config.maxBulk} manifest parts per submission`);
          if (part.type === 'field') {
            if (part.valueTruncated) throw new PayloadTooLarge(`manifest part ${manifests.length + 1}`, manifestLimit);
            const v = part.value;
            manifests.push(typeof v === 'string' ? parseManifestText(v, manifests.length, jdl) : v);
          } else {
            const text = (await readLimited(part.file, manifestLimit, `manifest part ${manifests.length + 1}`)).toString('utf8');
            manifests.push(parseManifestText(text, manifests.length, jdl));
          }
          continue;
        }
        if (part.type === 'field' && extraFields.includes(part.fieldname)) {
          if (fields.has(part.fieldname)) throw new InvalidRequest(`the '${part.fieldname}' part is given twice`);
          if (part.valueTruncated) throw new PayloadTooLarge(`the '${part.fieldname}' part`, manifestLimit);
          fields.set(part.fieldname, typeof part.value === 'string' ? part.value : JSON.stringify(part.value));
          continue;
        }
        if (part.type === 'field') {
          const accepted = ['manifest', 'jdl', ...extraFields].map((f) => `'${f}'`).join(', ');
          throw new InvalidRequest(`unexpected form field '${part.fieldname}': only ${accepted} parts and files are accepted`);
        }
        const name = part.filename;
        const problem = fileNameProblem(name ?? '');
        if (problem) {
          part.file.resume();
          throw new InvalidRequest(`file name ${JSON.stringify(name ?? '')} ${problem}`);
        }
        if (names.has(name)) {
          part.file.resume();
          throw new InvalidRequest(`file name '${name}' is given twice`);
        }
        names.add(name);
        if (files.length === 0) await mkdir(spool, { recursive: true, mode: 0o700 });
        const path = join(spool, String(files.length));
        let size = 0;
        const counter = new Transform({
          transform(chunk: Buffer, _enc, done) {
            size += chunk.length;
            if (size > limits.maxFileSize) return done(new PayloadTooLarge(`file '${name}'`, fileLimit));
            if (total + size > limits.maxSandboxSize) return done(new PayloadTooLarge('the input sandbox (its files together)', sandboxLimit));
            done(null, chunk);
          },
        });
        await pipeline(part.file, counter, createWriteStream(path, { mode: 0o600 }));
        if (part.file.truncated) throw new PayloadTooLarge(`file '${name}'`, fileLimit);
        total += size;
        files.push({ name, path, mode: 0o644 });
      }
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'FST_INVALID_JSON_FIELD_ERROR') throw new InvalidRequest('a manifest part is not valid JSON');
      if (code === 'FST_REQ_FILE_TOO_LARGE') throw new PayloadTooLarge('a file', fileLimit);
      if (code === 'FST_FILES_LIMIT') throw new PayloadTooLarge('the submission', { count: limits.maxFiles, unit: 'files', setting: 'jobs.sandbox.maxFiles' });
      if (code === 'FST_FIELDS_LIMIT') throw new PayloadTooLarge('the submission', { count: config.maxBulk, unit: 'form fields', setting: 'jobs.maxBulk' });
      // Set to maxFiles + maxBulk (routes.ts): reached with every file allowed and every manifest too.
      if (code === 'FST_PARTS_LIMIT') throw new PayloadTooLarge('the submission', { count: limits.maxFiles + config.maxBulk, unit: 'parts (files and manifests)', setting: 'jobs.sandbox.maxFiles' });
      // busboy's parse errors carry no code; file-system errors (errno codes) stay server errors.
      if (!(err instanceof DirigoError) && code === undefined && err instanceof Error) throw new InvalidRequest(`the multipart body is malformed: ${err.message}`);
      throw err;
    }
    if (manifests.length === 0) throw new InvalidRequest("the multipart request has no 'manifest' or 'jdl' part");
    return {
      manifests,
      fields,
      fileNames: files.map((f) => f.name),
      // gzip may make incompressible data slightly larger: the limit is on the files, checked above.
      storeSandbox: async () => (files.length > 0 ? store.put(packFiles(files), { ...sandboxLimit, bytes: limits.maxSandboxSize + 1024 * 1024 }) : undefined),
      cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
