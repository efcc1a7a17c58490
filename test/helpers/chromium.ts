/**
 * Debian's headless Chromium for the browser suites, driven by playwright-core (never a downloaded
 * browser), and a loopback callback server for redirect URIs (RFC 8252). Without /usr/bin/chromium a
 * suite is skipped with a visible message, except under CI=true, where it fails.
 */
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** False when Chromium is there; otherwise why the suite named `suite` is skipped (throws under CI). */
export function chromiumMissing(suite: string): string | false {
  const missing = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install -y chromium)`;
  if (missing && process.env.CI === 'true') throw new Error(missing);
  if (missing) process.stderr.write(`\n*** ${suite} SKIPPED: ${missing} ***\n\n`);
  return missing;
}

/** A fresh headless Chromium (its own temporary profile) that reaches nothing but what the test serves. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export interface CallbackServer {
  /** `http://127.0.0.1:<port>/callback` */
  redirectUri: string;
  /** Every callback received, newest last. */
  callbacks: URL[];
  close(): Promise<void>;
}

/** A loopback HTTP server that records the authorization responses sent to its /callback. */
export async function startCallbackServer(): Promise<CallbackServer> {
  const callbacks: URL[] = [];
  let port = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    if (url.pathname === '/callback') callbacks.push(url);
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><title>Callback</title><p>Signed in; you may close this window.</p>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    callbacks,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
