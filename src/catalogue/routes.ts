/**
 * File catalogue routes (README "File catalogue"): the six reads, the writes beside
 * them, and the bulk endpoint. Paths in URLs are URL-safe base 64 (paths.ts); every route needs a token.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { allowsCapability, requireCapability, requireToken, type Principal } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { InvalidRequest, NotFound } from '../kernel/errors.ts';
import { bulkRoute } from './bulk.ts';
import { parseConditions } from './conditions.ts';
import { baseName, decodePathParam, MAX_PATH_PARAM_CHARS, parentOf, pathParamTooLong } from './paths.ts';
import { READ, requireAllowed, requireTraversable } from './permissions.ts';
import { directoryBody, isObject, newFile, REST_FILE_KEYS } from './requests.ts';
import { CatalogueStore, directoryRecord, fileRecord } from './store.ts';
import * as OP from './operations.ts';
import { handlerChecks } from './request-schemas.ts';
import { FIND_PARAMETERS, findPaging } from './find-query.ts';

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
  const preHandler = requireToken(ctx);
  /** Routes whose path parameter, and conditions, the handler checks itself (request-schemas.ts). */
  const pathRoute = { attachValidation: true, preHandler: [handlerChecks('params'), preHandler] };
  const conditionRoute = { attachValidation: true, preHandler: [handlerChecks('params', 'querystring'), preHandler] };

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
    { ...conditionRoute, schema: OP.getCompatibleMetadata },
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
    { preHandler, schema: OP.defineMetadataField },
    async (request, reply) => {
      const body = request.body as { Name: unknown; Type: unknown; Scope: unknown };
      const field = await store.defineField(principalOf(request), body.Name, body.Type, body.Scope);
      reply.code(201);
      return { Name: field.name, Type: field.type, Scope: field.scope };
    },
  );

  app.delete(
    '/filecatalogue/metadata/:name',
    { ...pathRoute, schema: OP.removeMetadataField },
    async (request) => {
      const { name } = request.params as { name: string };
      await store.removeField(principalOf(request), name);
      return { removed: name };
    },
  );

  // ---- directories ----

  app.get(
    '/filecatalogue/directory/:path',
    { ...pathRoute, schema: OP.listDirectory },
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
    { ...pathRoute, schema: OP.createDirectory },
    async (request, reply) => {
      const path = decodePathParam((request.params as { path: string }).path);
      const { mode, metadata } = directoryBody(request.body);
      const principal = principalOf(request);
      const { record, created } = await store.write(principal, async (s) => {
        const { dir, created } = await s.mkdirs(path, mode);
        // An existing directory is answered as it is: a token that may neither create nor read there
        // learns nothing of it (mkdirs checks storage.create only when it creates).
        if (!created && !allowsCapability(principal, 'storage.create', path)) requireCapability(principal, 'storage.read', path);
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
    { ...pathRoute, schema: OP.removeDirectory },
    async (request) => {
      const path = decodePathParam((request.params as { path: string }).path);
      const { recursive } = request.query as { recursive?: boolean };
      const removed = await store.write(principalOf(request), (s) => s.removeDirectory(path, recursive === true));
      return { Path: path, Directories: removed.directories, Files: removed.files };
    },
  );

  app.get(
    '/filecatalogue/directory/:path/metadata',
    { ...conditionRoute, schema: OP.getDirectoryMetadataValues },
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
    { ...pathRoute, schema: OP.setDirectoryMetadata },
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
    { ...conditionRoute, schema: OP.searchDirectories },
    async (request) => {
      const dir = await readableDirectory(request, (request.params as { path: string }).path);
      const tree = parseConditions(rawQuery(request), await store.fields(), { scope: 'directory' });
      return store.search(dir.path, tree);
    },
  );

  app.get(
    '/filecatalogue/directory/:path/find',
    { ...conditionRoute, schema: OP.findFiles },
    async (request) => {
      const dir = await readableDirectory(request, (request.params as { path: string }).path);
      const raw = rawQuery(request);
      const page = findPaging(raw);
      const fields = await store.fields();
      const tree = parseConditions(raw, fields, { scope: 'any', parameters: FIND_PARAMETERS });
      return store.find(dir.path, tree, fields, page.maxFiles, page.cursor);
    },
  );

  // ---- files ----

  app.get(
    '/filecatalogue/file/:path/attributes',
    { ...pathRoute, schema: OP.getFileAttributes },
    async (request) => {
      const { dir, file } = await readableFile(request, (request.params as { path: string }).path);
      return fileRecord(dir.path, file);
    },
  );

  app.get(
    '/filecatalogue/file/:path/metadata',
    { ...pathRoute, schema: OP.getFileMetadata },
    async (request) => {
      const { dir, file } = await readableFile(request, (request.params as { path: string }).path);
      return store.fileMetadata(dir.id, file.meta, await store.fields());
    },
  );

  app.put(
    '/filecatalogue/file/:path/metadata',
    { ...pathRoute, schema: OP.setFileMetadata },
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
    { ...pathRoute, schema: OP.registerFile },
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
    { ...pathRoute, schema: OP.unregisterFile },
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
