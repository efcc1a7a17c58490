/**
 * Local servers for the tests: a test CA with server and client certificates, HTTPS/HTTP servers on
 * port 0, and a CONNECT proxy. Everything listens on 127.0.0.1 only.
 */
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type ServerResponse, type Server as HttpServer } from 'node:http';
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCa, issueCertificate, type CertificateAuthority } from '../../../../src/pki/dev-ca.ts';

export interface IdpTestPki {
  dir: string;
  ca: CertificateAuthority;
  caFile: string;
  serverCert: string;
  serverKey: string;
  clientCertFile: string;
  clientKeyFile: string;
  clientCombinedFile: string;
  /** A self-signed certificate no CA vouches for. */
  selfSignedCert: string;
  selfSignedKey: string;
}

let shared: Promise<IdpTestPki> | undefined;

export function idpTestPki(): Promise<IdpTestPki> {
  shared ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idp-client-pki-'));
    const ca = await createCa('/O=Dirigo/OU=idp-client tests/CN=idp-client Test CA');
    const server = await issueCertificate(ca, { dn: '/O=Dirigo/CN=localhost', kind: 'server', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    const client = await issueCertificate(ca, { dn: '/O=Dirigo/CN=mtls-client', kind: 'client' });
    const self = await createCa('/O=Nobody/CN=localhost');
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, ca.certPem);
    const clientCertFile = join(dir, 'client.crt');
    const clientKeyFile = join(dir, 'client.key');
    const clientCombinedFile = join(dir, 'client.pem');
    writeFileSync(clientCertFile, client.certPem);
    writeFileSync(clientKeyFile, client.keyPem, { mode: 0o600 });
    writeFileSync(clientCombinedFile, client.certPem + client.keyPem, { mode: 0o600 });
    return {
      dir, ca, caFile, serverCert: server.certPem, serverKey: server.keyPem, clientCertFile, clientKeyFile, clientCombinedFile,
      selfSignedCert: self.certPem, selfSignedKey: self.keyPem,
    };
  })();
  return shared;
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface Running {
  url: string;
  port: number;
  server: HttpServer | HttpsServer;
  close(): Promise<void>;
}

function running(server: HttpServer | HttpsServer, scheme: string): Promise<Running> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        url: `${scheme}://127.0.0.1:${port}`, port, server,
        close: () => new Promise<void>((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
      });
    });
  });
}

function wrap(handler: Handler): Handler {
  return async (req, res) => {
    try {
      await handler(req, res);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(e));
    }
  };
}

/** An HTTPS server with the test CA's localhost certificate; `requestCert` asks for (and checks) client certificates. */
export async function startHttps(handler: Handler, options: { requestCert?: boolean; selfSigned?: boolean } = {}): Promise<Running> {
  const pki = await idpTestPki();
  const server = createHttpsServer({
    cert: options.selfSigned ? pki.selfSignedCert : pki.serverCert,
    key: options.selfSigned ? pki.selfSignedKey : pki.serverKey,
    ca: pki.ca.certPem,
    requestCert: options.requestCert ?? false,
    rejectUnauthorized: false,
  }, wrap(handler));
  return running(server, 'https');
}

export function startHttp(handler: Handler): Promise<Running> {
  return running(createHttpServer(wrap(handler)), 'http');
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Echoes the request as JSON: method, url, headers, body. */
export const echo: Handler = async (req, res) => {
  const body = await readBody(req);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
};

export interface ProxyServer extends Running {
  /** "host:port" of each CONNECT, and the Proxy-Authorization seen with it. */
  connects: Array<{ target: string; auth: string | undefined }>;
  /** The request target of each plain-http request the proxy forwarded (absolute form: http://host/path). */
  forwarded: string[];
}

/** A CONNECT proxy (HTTP) that tunnels to 127.0.0.1 targets only; `auth` makes it require Basic credentials. */
export async function startConnectProxy(options: { auth?: string } = {}): Promise<ProxyServer> {
  const connects: ProxyServer['connects'] = [];
  const forwarded: string[] = [];
  // A plain-http request arrives in absolute form; it is forwarded to 127.0.0.1 targets only.
  const server = createHttpServer((req, res) => {
    forwarded.push(req.url ?? '');
    let target: URL;
    try { target = new URL(req.url ?? ''); } catch { res.writeHead(400); res.end(); return; }
    if (target.hostname !== '127.0.0.1') { res.writeHead(403); res.end(); return; }
    const upstream = httpRequest({ host: '127.0.0.1', port: target.port, path: `${target.pathname}${target.search}`, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(upstream);
  });
  const sockets = new Set<Socket>();
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    const auth = req.headers['proxy-authorization'];
    connects.push({ target, auth });
    const [host, port] = target.split(':');
    if (options.auth && auth !== `Basic ${Buffer.from(options.auth).toString('base64')}`) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (host !== '127.0.0.1' && host !== 'localhost') { client.end('HTTP/1.1 403 Forbidden\r\n\r\n'); return; }
    const upstream = netConnect(Number(port), '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream); sockets.add(client);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  const r = await running(server, 'http');
  return {
    ...r, connects, forwarded,
    close: async () => { for (const s of sockets) s.destroy(); await r.close(); },
  };
}
