/**
 * The peer of Dirigo's trivial route: a bare Fastify 5 server with Dirigo's TLS options (the same
 * certificate and key, a client certificate requested but not required, TLS 1.2 or later, no session
 * resumption; see src/app/server.ts) answering GET /healthz with {status:'ok'}, run as its own process so
 * that its CPU can be read from /proc. Prints `listening <url>` on standard output once it listens.
 *
 *   node bench/peers/servers/bare-fastify.ts <cert.pem> <key.pem> <ca.pem>
 */
import { constants as cryptoConstants } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const [cert, key, ca] = process.argv.slice(2);
if (!cert || !key || !ca) throw new Error('usage: bare-fastify.ts <cert> <key> <ca>');
const app = Fastify({
  https: {
    key: readFileSync(key),
    cert: readFileSync(cert),
    requestCert: true,
    rejectUnauthorized: false,
    ca: readFileSync(ca),
    minVersion: 'TLSv1.2',
    secureOptions: cryptoConstants.SSL_OP_NO_TICKET,
    sessionTimeout: 0,
  },
  return503OnClosing: true,
  forceCloseConnections: 'idle',
});
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.stdout.write(`listening https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
