/**
 * GET /downloads (the list), GET /downloads/{name} (a file, with its SHA-256 in Repr-Digest and its
 * ETag) and GET /downloads/{name}.sha256 (its checksum line, for `sha256sum -c`): the single executable
 * that matches this server, for pilots and users to fetch. No token is asked for: these are public
 * binaries, and a pilot has no credential before it runs.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isAbsolute, join } from 'node:path';
import type { AppContext } from '../kernel/context.ts';
import { NotFound } from '../kernel/errors.ts';
import { ErrorBody } from '../kernel/schemas.ts';
import { Binary, errors, SECURITY } from '../kernel/openapi.ts';
import { CHECKSUM_SUFFIX, DownloadsFolder } from './folder.ts';
import { DownloadHeaders, DownloadList, DownloadParams, IfNoneMatch } from './schemas.ts';

const tags = ['Downloads'];

/** The folder of `downloads.dir`, resolved against the data dir. */
function downloadsDir(ctx: AppContext): string {
  const dir = ctx.config.downloads.dir;
  return isAbsolute(dir) ? dir : join(ctx.config.dataDir, dir);
}

export const downloadsRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  if (!ctx.config.downloads.enabled) return;
  const folder = new DownloadsFolder(downloadsDir(ctx));
  const missing = (name: string) => new NotFound(`no download named ${name} on this server (GET /downloads lists them)`);

  const list = async (_request: FastifyRequest, reply: FastifyReply) => {
    const downloads = [];
    for (const name of await folder.names()) {
      const file = await folder.open(name);
      if (!file) continue; // removed or replaced meanwhile
      await file.handle.close();
      downloads.push({ name, size: file.size, ...file.facts, url: `${ctx.publicUrl}/downloads/${name}` });
    }
    reply.header('cache-control', 'no-cache');
    return { downloads };
  };
  app.get(
    '/downloads',
    {
      schema: {
        tags,
        security: SECURITY.none,
        operationId: 'listDownloads',
        summary: 'The files offered for download: the single executables of this server’s version, with their SHA-256',
        response: { 200: DownloadList },
        documented: { responses: { 400: { description: 'invalid_request: the URL or a query parameter cannot be read', content: { 'application/json': ErrorBody } } } },
      },
    },
    list,
  );

  /** The file, or its checksum line when `asked` ends in .sha256; 304 when `ifNoneMatch` is its ETag. */
  const sendDownload = async (asked: string, ifNoneMatch: string | undefined, reply: FastifyReply) => {
    const checksum = asked.endsWith(CHECKSUM_SUFFIX);
    const name = checksum ? asked.slice(0, -CHECKSUM_SUFFIX.length) : asked;
    const file = await folder.open(name);
    if (!file) throw missing(asked);
    const { sha256 } = file.facts;
    reply.header('cache-control', 'no-cache');
    if (checksum) {
      await file.handle.close();
      return reply.type('text/plain; charset=utf-8').send(`${sha256}  ${name}\n`);
    }
    const etag = `"sha256-${sha256}"`;
    reply.header('etag', etag);
    reply.header('x-content-sha256', sha256);
    reply.header('repr-digest', `sha-256=:${Buffer.from(sha256, 'hex').toString('base64')}:`);
    if (ifNoneMatch === etag) {
      await file.handle.close();
      return reply.code(304).send();
    }
    reply.header('content-length', file.size);
    reply.header('content-disposition', `attachment; filename="${name}"`);
    reply.type('application/octet-stream');
    return reply.send(file.handle.createReadStream({ start: 0 }));
  };

  app.get(
    '/downloads/:name',
    {
      schema: {
        tags,
        security: SECURITY.none,
        operationId: 'getDownload',
        summary: 'A file of the list; with .sha256 after its name, its checksum line (sha256sum format)',
        params: DownloadParams,
        headers: IfNoneMatch,
        response: errors(400, 404),
        documented: {
          responses: {
            200: {
              description: 'The file (application/octet-stream), or for {name}.sha256 the line `<hex>  <name>` (text/plain)',
              content: { 'application/octet-stream': Binary, 'text/plain': Binary },
              headers: DownloadHeaders,
            },
            304: { description: 'Not modified: the If-None-Match ETag is the current one', headers: { ETag: DownloadHeaders.ETag } },
          },
        },
      },
    },
    (request, reply) => sendDownload(request.params.name, request.headers['if-none-match'], reply),
  );
};
