/**
 * A TCP relay in front of a test server, for outages on demand: while `down`, it resets every open
 * connection and every new one, as a restarting instance or a cut network does. TLS passes through.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** `https://127.0.0.1:<port>` (the scheme of the target). */
  url: string;
  /** Starts (true) or ends (false) an outage. */
  down(on: boolean): void;
  /** Sends new connections to another server (an instance restarted on a new port). */
  retarget(url: string): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  let target = new URL(targetUrl);
  const open = new Set<Socket>();
  let outage = false;
  const server = createServer((client) => {
    if (outage) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `${target.protocol}//127.0.0.1:${port}`,
    retarget(url) {
      target = new URL(url);
    },
    down(on) {
      outage = on;
      if (on) for (const s of open) s.resetAndDestroy();
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
