/**
 * Thin entry: an HTTPS Fastify server that requests (but does not require) client certificates, with the
 * Dirigo plugin registered. Used by `dirigo serve` and by the tests.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { dirigoApp } from './app.ts';
import type { AppContext } from './context.ts';
import { InvalidRequest } from './errors.ts';
import { loggerOptions } from './logging.ts';

export type DirigoServer = FastifyInstance<HttpsServer, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

export interface StartedServer {
  app: DirigoServer;
  url: string;
  close(): Promise<void>;
}

export interface ServerOptions {
  logLevel?: string;
  /** Where log lines go (default stdout); tests capture them to prove secrets are redacted. */
  logStream?: NodeJS.WritableStream;
}

export async function buildServer(ctx: AppContext, options: ServerOptions = {}): Promise<DirigoServer> {
  const { config } = ctx;
  const app = Fastify({
    https: {
      key: readFileSync(config.tls.key),
      cert: readFileSync(config.tls.cert),
      // Ask for a certificate, accept connections without one; chains (with RFC 3820 proxies) are checked
      // in src/pki, and `ca` only tells browsers which certificates to offer.
      requestCert: true,
      rejectUnauthorized: false,
      ca: ctx.trustStore.pem(),
      minVersion: 'TLSv1.2',
      maxHeaderSize: config.server.maxHeaderSize,
    },
    logger: loggerOptions(options.logLevel ?? config.logging.level, options.logStream),
    bodyLimit: config.server.bodyLimit,
    routerOptions: { maxParamLength: 4096 },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    schemaErrorFormatter: (errors, dataVar) => {
      const e = errors[0]!;
      const where = `${dataVar}${e.instancePath.replace(/\//g, '.')}`;
      const property = (e.params as { missingProperty?: string; additionalProperty?: string }) ?? {};
      const name = property.missingProperty ?? property.additionalProperty;
      return new InvalidRequest(`${where}${name ? `.${name}` : ''} ${e.message ?? 'is invalid'}`);
    },
    clientErrorHandler: (err, socket) => {
      const tooLarge = (err as NodeJS.ErrnoException).code === 'HPE_HEADER_OVERFLOW';
      const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
      const body = JSON.stringify({
        error: tooLarge ? 'request_header_fields_too_large' : 'invalid_request',
        error_description: tooLarge ? 'the request headers are too large' : 'malformed HTTP request',
      });
      if (socket.writable) {
        socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      } else {
        socket.destroy(err);
      }
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  await app.register(dirigoApp, { ctx });
  return app;
}

export async function startServer(ctx: AppContext, options: ServerOptions = {}): Promise<StartedServer> {
  const app = await buildServer(ctx, options);
  const { host, port } = ctx.config.server;
  await app.listen({ host, port });
  const address = app.server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  const hostPart = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  ctx.setPublicUrl(`https://${hostPart}:${bound}`);
  return {
    app,
    url: ctx.publicUrl,
    async close() {
      await app.close();
      await ctx.close();
    },
  };
}
