/**
 * File catalogue routes (SPEC "File catalogue", DESIGN "File catalogue"): the six reads, the writes beside
 * them, and the bulk endpoint. Paths in URLs are URL-safe base 64 (paths.ts); every route needs a token.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireCapability, requireToken, type Principal } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { InvalidRequest, NotFound } from '../kernel/errors.ts';
import { ErrorBody } from '../kernel/schemas.ts';
import { SECURITY } from '../kernel/openapi.ts';
import { bulkRoute } from './bulk.ts';
import { parseConditions } from './conditions.ts';
import { baseName, decodePathParam, MAX_PATH_PARAM_CHARS, parentOf, pathParamTooLong } from './paths.ts';
import { READ, requireAllowed, requireTraversable } from './permissions.ts';
import { directoryBody, isObject, newFile, REST_FILE_KEYS } from './requests.ts';
import { CatalogueStore, directoryRecord, fileRecord } from './store.ts';
import * as S from './schemas.ts';

function rawQuery(request: FastifyRequest): string {
  const q = request.url.indexOf('?');
  return q === -1 ? '' : request.url.slice(q + 1);
}

function principalOf(request: FastifyRequest): Principal {
  return request.principal!;
}

export async function catalogueRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const store = new CatalogueStore(ctx.db, ctx.config.catalogue);
  await store.init();
  const tags = ['File catalogue'];
  const security = SECURITY.token;
  const preHandler = requireToken(ctx);
  const common = { tags, security };
  const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };

  /** Decodes the path, checks the token's storage capability, x on every ancestor and r on the directory. */
  const readableDirectory = async (request: FastifyRequest, encoded: string) => {
    const path = decodePathParam(encoded);
    const principal = principalOf(request);
    requireCapability(principal, 'storage.read', path);
    const { ancestors, dir } = await store.withAncestors(path);
    requireTraversable(principal, ancestors, `read ${path}`);
    if (!dir) throw new NotFound(`no directory ${path}`);
    requireAllowed(principal, dir, READ, path, `read ${path}`);
    return dir;
  };
  const readableFile = async (request: FastifyRequest, encoded: string) => {
    const path = decodePathParam(encoded);
    const principal = principalOf(request);
    requireCapability(principal, 'storage.read', path);
    const parent = parentOf(path);
    if (parent === undefined) throw new NotFound(`no file ${path}`);
    // The file's directory is the last of the directories above it: one query for all of them.
    const { ancestors, dir } = await store.withAncestors(parent);
    requireTraversable(principal, dir ? [...ancestors, dir] : ancestors, `read ${path}`);
    const file = dir ? await store.fileIn(dir, baseName(path)) : undefined;
    if (!dir || !file) throw new NotFound(`no file ${path}`);
    requireAllowed(principal, file, READ, path, `read ${path}`);
    return { path, dir, file };
  };

  // ---- fields ----

  app.get(
    '/filecatalogue/metadata',
    {
      preHandler,
      schema: { ...common, operationId: 'getCompatibleMetadata', summary: 'Metadata fields compatible with a condition, with their type and possible values (with conditions: directory fields)', description: S.CONDITIONS_HELP, response: { 200: S.CompatibleMetadata, ...errors } },
    },
    async (request) => {
      requireCapability(principalOf(request), 'storage.read', '/');
      const fields = await store.fields();
      const tree = parseConditions(rawQuery(request), fields, { scope: 'directory' });
      // As DIRAC's getCompatibleMetadata: with conditions, the directory fields compatible with them (the
      // values of file fields among every file of the matching directories would cost a scan of the files).
      const values = await store.compatibleValues('/', tree, fields, tree.terms.length === 0);
      const out: Record<string, { Type: string; Scope: string; Values: (string | number)[] }> = {};
      for (const field of fields.values()) {
        const v = values.get(field);
        // Without a condition every field is listed (even without values), so that clients discover them.
        if (v ? true : tree.terms.length === 0) out[field.name] = { Type: field.type, Scope: field.scope, Values: v ?? [] };
      }
      return out;
    },
  );

  app.post(
    '/filecatalogue/metadata',
    {
      preHandler,
      schema: { ...common, operationId: 'defineMetadataField', summary: 'Define a metadata field (CatalogueAdministrator)', body: S.FieldDefinition, response: { 201: S.FieldAnswer, ...errors } },
    },
    async (request, reply) => {
      const body = request.body as { Name: unknown; Type: unknown; Scope: unknown };
      const field = await store.defineField(principalOf(request), body.Name, body.Type, body.Scope);
      reply.code(201);
      return { Name: field.name, Type: field.type, Scope: field.scope };
    },
  );

  app.delete(
    '/filecatalogue/metadata/:name',
    { preHandler, schema: { ...common, operationId: 'removeMetadataField', summary: 'Remove an unused metadata field (CatalogueAdministrator)', params: S.NameParams, response: { 200: S.Removed, ...errors } } },
    async (request) => {
      const { name } = request.params as { name: string };
      await store.removeField(principalOf(request), name);
      return { removed: name };
    },
  );

  // ---- directories ----

  app.get(
    '/filecatalogue/directory/:path',
    {
      preHandler,
      schema: { ...common, operationId: 'listDirectory', summary: 'Contents of a directory', params: S.PathParams, querystring: S.ListingQuery, response: { 200: S.Listing, ...errors } },
    },
    async (request) => {
      const dir = await readableDirectory(request, (request.params as { path: string }).path);
      const { verbose } = request.query as { verbose?: boolean };
      const { dirs, files } = await store.listing(dir);
      if (!verbose) {
        return {
          Path: dir.path,
          SubDirs: dirs.map((d) => ({ Path: d.path, Name: d.name })),
          Files: files.map((f) => ({ Path: dir.path === '/' ? `/${f.name}` : `${dir.path}/${f.name}`, Name: f.name, Size: Number(f.size) })),
        };
      }
      return {
        Path: dir.path,
        Directory: directoryRecord(dir),
        Metadata: await store.directoryMetadata(dir.id, await store.fields()),
        SubDirs: dirs.map(directoryRecord),
        Files: files.map((f) => fileRecord(dir.path, f)),
      };
    },
  );

  app.put(
    '/filecatalogue/directory/:path',
    {
      preHandler,
      schema: { ...common, operationId: 'createDirectory', summary: 'Create a directory and its missing parents; optional body {"Mode", "Metadata"}', params: S.PathParams, documented: { body: { 'application/json': S.DirectoryBody } }, response: { 200: S.DirectoryRecord, 201: S.DirectoryRecord, ...errors } },
    },
    async (request, reply) => {
      const path = decodePathParam((request.params as { path: string }).path);
      const { mode, metadata } = directoryBody(request.body);
      const principal = principalOf(request);
      const { record, created } = await store.write(principal, async (s) => {
        const { dir, created } = await s.mkdirs(path, mode);
        if (!created && mode !== undefined && mode !== Number(dir.mode)) await s.chmod(dir, mode);
        if (Object.keys(metadata).length > 0) await s.setDirectoryMetadata(dir, metadata);
        return { record: directoryRecord((await store.directory(path, s.trx))!), created };
      });
      reply.code(created ? 201 : 200);
      return record;
    },
  );

  app.delete(
    '/filecatalogue/directory/:path',
    {
      preHandler,
      schema: { ...common, operationId: 'removeDirectory', summary: 'Remove an empty directory, or a subtree with recursive=true (owner or administrator)', params: S.PathParams, querystring: S.RemoveQuery, response: { 200: S.RemovedDirectory, ...errors } },
    },
    async (request) => {
      const path = decodePathParam((request.params as { path: string }).path);
      const { recursive } = request.query as { recursive?: boolean };
      const removed = await store.write(principalOf(request), (s) => s.removeDirectory(path, recursive === true));
      return { Path: path, Directories: removed.directories, Files: removed.files };
    },
  );

  app.get(
    '/filecatalogue/directory/:path/metadata',
    {
      preHandler,
      schema: { ...common, operationId: 'getDirectoryMetadataValues', summary: 'Values of each field among the directories of the subtree compatible with a condition', description: S.CONDITIONS_HELP, params: S.PathParams, response: { 200: S.DirectoryValues, ...errors } },
    },
    async (request) => {
      const dir = await readableDirectory(request, (request.params as { path: string }).path);
      const fields = await store.fields();
      const tree = parseConditions(rawQuery(request), fields, { scope: 'directory' });
      const values = await store.compatibleValues(dir.path, tree, fields);
      const out: Record<string, (string | number)[]> = {};
      for (const [field, list] of [...values].sort(([a], [b]) => (a.name < b.name ? -1 : 1))) out[field.name] = list;
      return out;
    },
  );

  app.put(
    '/filecatalogue/directory/:path/metadata',
    {
      preHandler,
      schema: { ...common, operationId: 'setDirectoryMetadata', documented: { body: { 'application/json': S.MetadataBody } }, summary: 'Set directory metadata ({"field": value}; null removes a value)', description: S.METADATA_BODY_HELP, params: S.PathParams, response: { 200: S.MetadataMap, ...errors } },
    },
    async (request) => {
      const path = decodePathParam((request.params as { path: string }).path);
      const body = request.body;
      if (!isObject(body)) throw new InvalidRequest('body must be a JSON object {"field": value}');
      return store.write(principalOf(request), async (s) => {
        const dir = await s.directory(path);
        if (!dir) throw new NotFound(`no directory ${path}`);
        await s.setDirectoryMetadata(dir, body);
        return store.directoryMetadata(dir.id, await s.fields(), s.trx);
      });
    },
  );

  app.get(
    '/filecatalogue/directory/:path/search',
    {
      preHandler,
      schema: { ...common, operationId: 'searchDirectories', summary: 'Directories under a directory matching a condition, with recursive file counts and sizes', description: S.CONDITIONS_HELP, params: S.PathParams, response: { 200: S.SearchAnswer, ...errors } },
    },
    async (request) => {
      const dir = await readableDirectory(request, (request.params as { path: string }).path);
      const tree = parseConditions(rawQuery(request), await store.fields(), { scope: 'directory' });
      return store.search(dir.path, tree);
    },
  );

  // ---- files ----

  app.get(
    '/filecatalogue/file/:path/attributes',
    { preHandler, schema: { ...common, operationId: 'getFileAttributes', summary: 'File attributes', params: S.PathParams, response: { 200: S.FileRecord, ...errors } } },
    async (request) => {
      const { dir, file } = await readableFile(request, (request.params as { path: string }).path);
      return fileRecord(dir.path, file);
    },
  );

  app.get(
    '/filecatalogue/file/:path/metadata',
    { preHandler, schema: { ...common, operationId: 'getFileMetadata', summary: 'File metadata, own and inherited from its directories', params: S.PathParams, response: { 200: S.MetadataMap, ...errors } } },
    async (request) => {
      const { dir, file } = await readableFile(request, (request.params as { path: string }).path);
      return store.fileMetadata(dir.id, file.meta, await store.fields());
    },
  );

  app.put(
    '/filecatalogue/file/:path/metadata',
    {
      preHandler,
      schema: { ...common, operationId: 'setFileMetadata', documented: { body: { 'application/json': S.MetadataBody } }, summary: 'Set file metadata ({"field": value}; null removes a value)', description: S.METADATA_BODY_HELP, params: S.PathParams, response: { 200: S.MetadataMap, ...errors } },
    },
    async (request) => {
      const path = decodePathParam((request.params as { path: string }).path);
      const body = request.body;
      if (!isObject(body)) throw new InvalidRequest('body must be a JSON object {"field": value}');
      return store.write(principalOf(request), async (s) => {
        const { dir, file } = await store.requireFile(path, s.trx);
        const meta = await s.setFileMetadata(dir, file, body);
        return store.fileMetadata(dir.id, meta, await s.fields(), s.trx);
      });
    },
  );

  app.put(
    '/filecatalogue/file/:path',
    {
      preHandler,
      schema: { ...common, operationId: 'registerFile', documented: { body: { 'application/json': S.FileBody } }, summary: 'Register a file (missing parent directories are created)', params: S.PathParams, description: S.FILE_BODY_HELP, response: { 201: S.FileRecord, ...errors } },
    },
    async (request, reply) => {
      const path = decodePathParam((request.params as { path: string }).path);
      if (!isObject(request.body)) throw new InvalidRequest('body must be a JSON object {"Size", "Checksum", ...}');
      const body = request.body;
      const record = await store.write(principalOf(request), async (s) => {
        const item = newFile(path, body, await s.fields(), REST_FILE_KEYS, [], 'body');
        await s.registerFiles([item]);
        const { dir, file } = await store.requireFile(path, s.trx);
        return fileRecord(dir.path, file);
      });
      reply.code(201);
      return record;
    },
  );

  app.delete(
    '/filecatalogue/file/:path',
    { preHandler, schema: { ...common, operationId: 'unregisterFile', summary: 'Unregister a file', params: S.PathParams, response: { 200: S.RemovedFile, ...errors } } },
    async (request) => {
      const path = decodePathParam((request.params as { path: string }).path);
      await store.write(principalOf(request), (s) => s.removeFile(path));
      return { Path: path };
    },
  );

  // What the path routes cannot match: a segment too long for any catalogue path (the router's limit), or
  // a '/' inside it (standard base 64). Either is said plainly instead of 404.
  const notUrlSafe = async (request: FastifyRequest) => {
    const segment = ((request.params as { '*'?: string })['*'] ?? '').split('/')[0]!;
    if (segment.length > MAX_PATH_PARAM_CHARS) {
      throw pathParamTooLong();
    }
    throw new InvalidRequest("path: a '/' inside the path segment is not URL-safe base 64; write '+' and '/' as '-' and '_' (RFC 4648 §5)");
  };
  for (const prefix of ['/filecatalogue/directory/*', '/filecatalogue/file/*']) app.all(prefix, { schema: { hide: true } }, notUrlSafe);

  await bulkRoute(app, ctx, store, preHandler);
}
