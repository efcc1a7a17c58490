/**
 * Thin entry: an HTTPS Fastify server that requests (but does not require) client certificates, with the
 * Dirigo plugin registered. Used by `dirigo serve` and by the tests.
 */
import { constants as cryptoConstants } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { dirigoApp } from './app.ts';
import type { AppContext } from './context.ts';
import { InvalidRequest } from '../kernel/errors.ts';
import { errorHandler } from '../kernel/error-handler.ts';
import { MAX_PATH_PARAM_CHARS, pathParamTooLong } from '../protocol/catalogue-paths.ts';
import { loggingOptions } from '../kernel/logging.ts';

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
  /** Registered before the service's routes (tests: the response validator); none in production. */
  plugins?: ((app: FastifyInstance) => Promise<void>)[];
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
      // No TLS session resumption (tickets or session ids). A resumed session exposes only the leaf its
      // full handshake saw, not the chain (OpenSSL keeps no peer chain in a session), and an RFC 3820 proxy
      // cannot be verified without the certificate it extends; remembering identities by leaf would let a
      // resumed session carry more than its own full handshake verified. A full handshake costs about a
      // millisecond of CPU; clients that care keep their connections alive.
      secureOptions: cryptoConstants.SSL_OP_NO_TICKET,
      sessionTimeout: 0,
      maxHeaderSize: config.server.maxHeaderSize,
    },
    ...loggingOptions(options.logLevel ?? config.logging.level, options.logStream),
    bodyLimit: config.server.bodyLimit,
    // A path parameter may be as long as the longest catalogue path in base 64; longer ones, and URLs the
    // router cannot decode, get the project's JSON error (the framework's default echoes the URL).
    routerOptions: { maxParamLength: MAX_PATH_PARAM_CHARS },
    frameworkErrors: (error, request, reply) => {
      const answer = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? pathParamTooLong() : new InvalidRequest('the URL is malformed');
      errorHandler(answer, request as FastifyRequest, reply as FastifyReply);
    },
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
      const code = (err as NodeJS.ErrnoException).code ?? '';
      const tooLarge = code === 'HPE_HEADER_OVERFLOW';
      // OpenSSL finds a bad signature in the client's chain while the connection runs (curl and other
      // OpenSSL clients send it): that is a rejected certificate, not a malformed request.
      const badCertificate = /^ERR_SSL_.*(SIGNATURE|CERTIFICATE|VERIFY)/.test(code);
      const [status, error, description] = tooLarge
        ? ['431 Request Header Fields Too Large', 'request_header_fields_too_large', 'the request headers are too large']
        : badCertificate
          ? ['401 Unauthorized', 'invalid_client', 'the client certificate was rejected: a signature in its chain does not verify']
          : ['400 Bad Request', 'invalid_request', 'malformed HTTP request'];
      const body = JSON.stringify({ error, error_description: description });
      if (socket.writable) {
        socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      } else {
        socket.destroy(err);
      }
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  for (const plugin of options.plugins ?? []) await app.register(plugin);
  await app.register(dirigoApp, { ctx });
  return app;
}

/** The server could not listen: the address is taken, not ours to use, or unknown. */
export class ListenError extends Error {
  override name = 'ListenError';
}

const LISTEN_PROBLEMS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (is another server running?)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine',
};

export async function startServer(ctx: AppContext, options: ServerOptions = {}): Promise<StartedServer> {
  const app = await buildServer(ctx, options);
  const { host, port } = ctx.config.server;
  try {
    await app.listen({ host, port });
  } catch (err) {
    // Nothing may keep running: background duties and the database pool end with the app.
    await app.close().catch(() => {});
    await ctx.close().catch(() => {});
    const code = (err as NodeJS.ErrnoException).code ?? '';
    throw new ListenError(`cannot listen on ${host}:${port}: ${LISTEN_PROBLEMS[code] ?? (err as Error).message}`, { cause: err });
  }
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
