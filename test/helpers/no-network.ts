/**
 * Loaded before every test file (`node --import`): outbound network is blocked. Any TCP connection to an
 * address outside loopback fails at once, so a test can never depend on, or leak to, the outside world.
 */
import net from 'node:net';

/** `*.localhost` too: loopback names by RFC 6761 §6.3 (the S3 tests' virtual hosts, `<bucket>.s3.localhost`). */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+|([a-z0-9-]+\.)*localhost)$/i;

const original = net.Socket.prototype.connect;
net.Socket.prototype.connect = function connect(this: net.Socket, ...args: unknown[]) {
  const first = args[0];
  let host: string | undefined;
  let path: string | undefined;
  if (Array.isArray(first)) {
    const opts = first[0] as net.NetConnectOpts & { path?: string; host?: string };
    host = opts.host;
    path = opts.path;
  } else if (first && typeof first === 'object') {
    const opts = first as { host?: string; path?: string };
    host = opts.host;
    path = opts.path;
  } else if (typeof first === 'number') {
    host = typeof args[1] === 'string' ? (args[1] as string) : 'localhost';
  } else if (typeof first === 'string') {
    path = first;
  }
  if (path === undefined && host !== undefined && !LOOPBACK.test(host.replace(/^\[|\]$/g, ''))) {
    const err = Object.assign(new Error(`outbound network is blocked in tests (attempted ${host})`), { code: 'ENETUNREACH' });
    process.nextTick(() => this.destroy(err));
    return this;
  }
  return (original as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;
