/**
 * POST /filecatalogue/bulk: newline-delimited JSON (application/x-ndjson), one operation per line:
 *   {"field": name, "type": t, "scope": s}                      define a field (CatalogueAdministrator)
 *   {"dir": path, "metadata"?: {...}, "mode"?: m}               mkdir -p, then set metadata
 *   {"file": path, "size": n, "checksum": c, "checksumType"?, "guid"?, "status"?, "mode"?, "metadata"?}
 * The body is streamed and applied in transactions of `catalogue.bulkBatchSize` operations (and at most
 * 16 MiB of lines), in order.
 * On the first bad line the operations before it are applied (the failing transaction is rolled back and
 * replayed up to that line) and nothing after it: the answer says how many were applied and which line
 * failed why. The body limit is `catalogue.bulkBodyLimit`, counted here because the stream bypasses
 * Fastify's own limit.
 */
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../kernel/context.ts';
import { toDirigoError } from '../kernel/error-handler.ts';
import { InvalidRequest, PayloadTooLarge, UnsupportedMediaType } from '../kernel/errors.ts';
import { refuseUnstorableText } from '../kernel/storable-text.ts';
import { refuseDeepJson } from '../kernel/json-depth.ts';
import { checkPath } from '../protocol/catalogue-paths.ts';
import { parseMode } from './permissions.ts';
import { asStrings, DirectoryLine, FieldLine, FileLine } from './request-schemas.ts';
import { isObject, newFile } from './requests.ts';
import { bodyErrors } from './schema-errors.ts';
import { bulkImport } from './operations.ts';
import type { Field } from './values.ts';
import type { CatalogueRouteOptions } from './route-options.ts';
import { AtLine, BatchedWriteFailed, type NewFile, type PreparedDirectory, type WriteSession } from './store.ts';

/** A batch also ends at this much line text, so that long lines cannot make one transaction hold much memory. */
const MAX_BATCH_CHARS = 16 * 1024 * 1024;

type Op =
  | { kind: 'field'; line: number; name: string; type: string; scope: string }
  | { kind: 'dir'; line: number; path: string; mode: number | undefined; metadata: Record<string, unknown> }
  | { kind: 'file'; line: number; path: string; body: Static<typeof FileLine>; checked: NewFile | undefined };

/** A line's check by its schema: the line typed, or the schema's refusal in the catalogue's words. */
function lineCheck<T extends TSchema>(schema: T, hint: string): (value: unknown) => Static<T> {
  const validator = Compile(schema);
  const refusal = bodyErrors(schema, hint);
  return (value) => {
    if (validator.Check(value)) return value;
    throw refusal([...validator.Errors(value)], 'line');
  };
}

const checkLine = {
  // The store names a bad field name, type or scope itself, as for POST /filecatalogue/metadata.
  field: lineCheck(asStrings(FieldLine), '{"field", "type", "scope"}'),
  dir: lineCheck(DirectoryLine, '{"dir", "metadata"?, "mode"?}'),
  file: lineCheck(FileLine, '{"file", "size", "checksum", ...}'),
};

/**
 * Parses one line's JSON and shape. A file line is also checked against `fields` (the fields defined when
 * the request began), so that this work overlaps the previous batch's transaction; a line that fails the
 * check, or names a field defined later, is checked again, in order, inside the transaction.
 */
export function parseLine(text: string, line: number, fields: ReadonlyMap<string, Field>): Op {
  let value: unknown;
  // The stream of lines bypasses the JSON body parser (app.ts), and its depth check with it.
  refuseDeepJson(text, 'the line');
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new InvalidRequest(`not JSON: ${(err as Error).message}`);
  }
  if (!isObject(value)) throw new InvalidRequest('each line must be a JSON object');
  // The body is a stream of lines, outside the route's body check (app.ts): the same rule, per line.
  refuseUnstorableText(value, 'line');
  const kinds = ['field', 'dir', 'file'].filter((k) => k in value);
  if (kinds.length !== 1) throw new InvalidRequest('a line must have exactly one of "field", "dir" or "file"');
  if ('field' in value) {
    const definition = checkLine.field(value);
    return { kind: 'field', line, name: definition.field, type: definition.type, scope: definition.scope };
  }
  if ('dir' in value) {
    const dir = checkLine.dir(value);
    return { kind: 'dir', line, path: checkPath(dir.dir, 'dir'), mode: parseMode(dir.mode, 'mode'), metadata: dir.metadata ?? {} };
  }
  const file = checkLine.file(value);
  const path = checkPath(file.file, 'file');
  let checked: NewFile | undefined;
  try {
    checked = { ...newFile(path, file, fields, 'file'), line };
  } catch {
    checked = undefined;
  }
  return { kind: 'file', line, path, body: file, checked };
}

/** Whether every field of `before` is still defined alike in `now` (then checks made against it hold). */
function stillDefined(before: ReadonlyMap<string, Field>, now: ReadonlyMap<string, Field>): boolean {
  for (const [name, f] of before) {
    const g = now.get(name);
    if (!g || g.id !== f.id || g.type !== f.type || g.scope !== f.scope) return false;
  }
  return true;
}

function lineTooLong(lineLimit: number): PayloadTooLarge {
  return new PayloadTooLarge('the line', { count: lineLimit, unit: 'characters', setting: 'catalogue.bulkLineLimit' });
}

async function* readLines(stream: Readable, limit: number, lineLimit: number): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let buffer = '';
  let bytes = 0;
  for await (const received of stream as AsyncIterable<Buffer>) {
    // The lines that end within the limit are still applied: a chunk is cut at it, whatever its size.
    const over = bytes + received.length > limit;
    const chunk = over ? received.subarray(0, limit - bytes) : received;
    bytes += chunk.length;
    buffer += decoder.write(chunk);
    let start = 0;
    for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n', start)) {
      if (nl - start > lineLimit) throw lineTooLong(lineLimit);
      yield buffer.slice(start, nl);
      start = nl + 1;
    }
    buffer = buffer.slice(start);
    if (over) throw new PayloadTooLarge('the bulk body', { bytes: limit, setting: 'catalogue.bulkBodyLimit' });
    // Also before its end has arrived: a line without end is not buffered without bound.
    if (buffer.length > lineLimit) throw lineTooLong(lineLimit);
  }
  buffer += decoder.end();
  if (buffer.length > 0) yield buffer;
}

/**
 * Applies `ops` in order inside one transaction. Files wait and are registered in large groups; with
 * `batched`, new directories under existing parents wait too and are created in groups (createDirectories),
 * which may refuse with BatchedWriteFailed: the caller then runs the operations again one by one (without
 * `batched`), and that run names the first failing line.
 */
async function runOps(s: WriteSession, ops: Op[], batched: boolean, checkedWith: ReadonlyMap<string, Field>): Promise<void> {
  const trusted = stillDefined(checkedWith, await s.fields());
  // The directories this batch names, and their ancestors, in one query instead of one per directory line.
  await s.preload(ops.filter((o) => o.kind === 'dir').map((o) => o.path));
  let files: NewFile[] = [];
  let dirs: PreparedDirectory[] = [];
  const pendingDirs = new Set<string>();
  const flushDirs = async () => {
    if (dirs.length === 0) return;
    const group = dirs;
    dirs = [];
    pendingDirs.clear();
    await s.createDirectories(group);
  };
  const flushFiles = async () => {
    // Files may lie in directories still waiting.
    await flushDirs();
    if (files.length === 0) return;
    const group = files;
    files = [];
    try {
      await s.registerFiles(group);
    } catch (err) {
      throw err instanceof AtLine ? err : new AtLine(group[0]!.line!, err);
    }
  };
  for (const op of ops) {
    if (op.kind === 'file') {
      try {
        files.push(trusted && op.checked ? op.checked : { ...newFile(op.path, op.body, await s.fields(), 'file'), line: op.line });
      } catch (err) {
        await flushFiles();
        throw new AtLine(op.line, err);
      }
      continue;
    }
    // A line with a Mode goes alone, after the files before it (which it could otherwise make unwritable).
    if (batched && op.kind === 'dir' && op.mode === undefined) {
      // A directory under one still waiting needs its parent made first: make the group, then look again.
      let prepared = await s.prepareDirectory(op.path, op.metadata, pendingDirs);
      if (!prepared && dirs.length > 0) {
        await flushDirs();
        prepared = await s.prepareDirectory(op.path, op.metadata, pendingDirs);
      }
      if (prepared) {
        dirs.push(prepared);
        pendingDirs.add(op.path);
        continue;
      }
    }
    // Pending files may wait past directory lines (so they are inserted in large groups): a directory line
    // never changes what a file registration does, except a Mode change, and field definitions must come first.
    if (op.kind === 'field' || op.mode !== undefined) await flushFiles();
    else await flushDirs();
    try {
      if (op.kind === 'field') {
        await s.defineField(op.name, op.type, op.scope);
      } else {
        const { dir, created } = await s.mkdirs(op.path, op.mode);
        if (!created && op.mode !== undefined && op.mode !== Number(dir.mode)) await s.chmod(dir, op.mode);
        if (Object.keys(op.metadata).length > 0) await s.setDirectoryMetadata(dir, op.metadata);
      }
    } catch (err) {
      // Report the first failing line: a pending file before this line may fail too.
      await flushFiles();
      throw err instanceof AtLine ? err : new AtLine(op.line, err);
    }
  }
  await flushFiles();
}

export const bulkRoute: FastifyPluginAsyncTypebox<CatalogueRouteOptions & { ctx: AppContext }> = async (app, { ctx, service, auth }) => {
  const { bulkBodyLimit, bulkLineLimit, bulkBatchSize } = ctx.config.catalogue;
  const store = service.store;

  app.post(
    '/filecatalogue/bulk',
    { preHandler: auth, schema: bulkImport },
    async (request, reply) => {
      // The NDJSON parser (routes.ts) hands the raw stream on; any other media type is parsed whole.
      const stream = request.body;
      if (!(stream instanceof Readable)) throw new UnsupportedMediaType('send the operations as application/x-ndjson');
      const principal = request.principal!;
      service.requireImporter(principal);
      const fields = await store.fields();
      let applied = 0;
      /** The first failing line of an applied batch (the earliest failure: batches run in order). */
      let failure: { line: number; error: unknown } | undefined;
      /** A line that did not parse or a body that broke off; it comes after every batch already sent. */
      let readFailure: { line: number; error: unknown } | undefined;
      let batch: Op[] = [];
      let batchChars = 0;

      const apply = async (ops: Op[]): Promise<void> => {
        if (ops.length === 0) return;
        try {
          try {
            await store.write(principal, (s) => runOps(s, ops, true, fields));
          } catch (err) {
            if (!(err instanceof BatchedWriteFailed)) throw err;
            await store.write(principal, (s) => runOps(s, ops, false, fields));
          }
          applied += ops.length;
          return;
        } catch (err) {
          const at = err instanceof AtLine ? err : new AtLine(ops[0]!.line, err);
          failure = { line: at.line, error: at.cause };
          const before = ops.findIndex((o) => o.line === at.line);
          if (before > 0) {
            try {
              await store.write(principal, (s) => runOps(s, ops.slice(0, before), false, fields));
              applied += before;
            } catch (again) {
              const a = again instanceof AtLine ? again : new AtLine(ops[0]!.line, again);
              failure = { line: a.line, error: a.cause };
            }
          }
        }
      };

      // One batch is applied while the next one is read and parsed, so that parsing (this process) and
      // writing (the database) overlap. Batches still commit one after the other, in order, and a batch
      // is only sent once the previous one has succeeded: nothing after a failing line is applied.
      let inflight: Promise<void> = Promise.resolve();
      let line = 0;
      try {
        for await (const text of readLines(stream, bulkBodyLimit, bulkLineLimit)) {
          line++;
          if (text.trim() === '') continue;
          let op: Op;
          try {
            op = parseLine(text, line, fields);
          } catch (err) {
            readFailure = { line, error: err };
            break;
          }
          batch.push(op);
          batchChars += text.length;
          if (batch.length >= bulkBatchSize || batchChars >= MAX_BATCH_CHARS) {
            await inflight;
            if (failure) break;
            inflight = apply(batch);
            batch = [];
            batchChars = 0;
          }
        }
      } catch (err) {
        readFailure = { line: line + 1, error: err };
      }
      await inflight;
      // The operations read before a bad line are applied (every line in `batch` precedes it).
      if (!failure && batch.length > 0) await apply(batch);
      failure ??= readFailure;
      if (!failure) return { applied };
      const mapped = toDirigoError(failure.error);
      if (mapped.status >= 500) request.log.error({ err: failure.error }, 'bulk line failed');
      // The rest of the body is not read: close the connection rather than drain it.
      reply.code(mapped.status as 400).header('connection', 'close');
      return { applied, error: { line: failure.line, ...mapped.toJSON() } };
    },
  );
};
