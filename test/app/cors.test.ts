/**
 * CORS for browser applications on other origins: preflights answered for the configured origins only,
 * credentials never with `*`, never for the interactive pages; and a real Chromium page on another
 * origin calling the API, allowed and refused.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startTestService, type TestService } from '../helpers/service.ts';
import { chromiumMissing, launchChromium, startCallbackServer, type CallbackServer } from '../helpers/chromium.ts';

const APP = 'https://app.example';

function preflight(svc: TestService, path: string, origin: string, method = 'POST') {
  return svc.request(path, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' },
  });
}

describe('CORS', () => {
  let svc: TestService;
  let open: TestService;
  let closed: TestService;
  before(async () => {
    const server = (cors: object) => ({ server: { host: '127.0.0.1', port: 0, cors } });
    svc = await startTestService({ dialect: 'sqlite', config: server({ origins: [APP], credentials: true }) });
    open = await startTestService({ dialect: 'sqlite', config: server({ origins: ['*'], credentials: true }) });
    closed = await startTestService({ dialect: 'sqlite' });
  });
  after(async () => {
    await Promise.all([svc?.close(), open?.close(), closed?.close()]);
  });

  it('answers a preflight from an allowed origin with exactly that origin, the methods and headers', async () => {
    const res = await preflight(svc, '/jobs', APP);
    assert.equal(res.status, 204);
    assert.equal(res.headers['access-control-allow-origin'], APP);
    assert.equal(res.headers['access-control-allow-credentials'], 'true');
    assert.match(String(res.headers['access-control-allow-methods']), /\bPOST\b/);
    assert.match(String(res.headers['access-control-allow-headers']), /Authorization/);
    assert.equal(res.headers['access-control-max-age'], '600');
    assert.match(String(res.headers.vary), /Origin/);
  });

  it('adds the origin and the exposed headers to actual responses', async () => {
    const res = await svc.request('/healthz', { headers: { origin: APP } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['access-control-allow-origin'], APP);
    assert.match(String(res.headers['access-control-expose-headers']), /X-Request-Id/);
  });

  it('refuses other origins with a named 403, and sends no CORS headers', async () => {
    const res = await preflight(svc, '/jobs', 'https://evil.example');
    assert.equal(res.status, 403);
    assert.equal(res.json.error, 'cors_refused');
    assert.match(res.json.error_description, /origin https:\/\/evil\.example is not allowed \(server\.cors\.origins\)/);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    const get = await svc.request('/healthz', { headers: { origin: 'https://evil.example' } });
    assert.equal(get.headers['access-control-allow-origin'], undefined);
  });

  it('never opens the interactive pages to other origins, even allowed ones', async () => {
    for (const path of ['/oauth2/auth', '/oauth2/login', '/oauth2/consent', '/oauth2/device/verify', '/oauth2/logout']) {
      const res = await preflight(svc, path, APP);
      assert.equal(res.status, 403, path);
      assert.match(res.json.error_description, /interactive page/);
      assert.equal(res.headers['access-control-allow-origin'], undefined, path);
    }
  });

  it('with `*`, allows any origin but never credentials', async () => {
    const res = await preflight(open, '/jobs', 'https://anywhere.example');
    assert.equal(res.status, 204);
    assert.equal(res.headers['access-control-allow-origin'], '*');
    assert.equal(res.headers['access-control-allow-credentials'], undefined);
  });

  it('allows no origin by default', async () => {
    const res = await preflight(closed, '/jobs', APP);
    assert.equal(res.status, 403);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
  });
});

describe('CORS in Chromium', { skip: chromiumMissing('CORS in Chromium') }, () => {
  let allowedPage: CallbackServer;
  let otherPage: CallbackServer;
  let svc: TestService;
  let browser: Browser;
  before(async () => {
    allowedPage = await startCallbackServer();
    otherPage = await startCallbackServer();
    const origin = new URL(allowedPage.redirectUri).origin;
    svc = await startTestService({ dialect: 'sqlite', config: { server: { host: '127.0.0.1', port: 0, cors: { origins: [origin] } } } });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await svc?.close();
    await allowedPage?.close();
    await otherPage?.close();
  });

  /** Runs fetch in a page served from `page`'s origin: the status, or the browser's refusal. */
  async function fetchFrom(page: CallbackServer, token: string): Promise<string> {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const tab = await context.newPage();
      await tab.goto(page.redirectUri);
      return await tab.evaluate(
        async ([url, bearer]) => {
          try {
            const res = await fetch(`${url}/jobs?maxJobs=1`, { headers: { authorization: `Bearer ${bearer}` } });
            return `${res.status} ${res.headers.get('x-request-id') ? 'with' : 'without'} request id`;
          } catch (err) {
            return `refused: ${(err as Error).name}`;
          }
        },
        [svc.url, token] as const,
      );
    } finally {
      await context.close();
    }
  }

  it('lets a page on an allowed origin call the API with a bearer token, and reads the exposed request id', async () => {
    assert.equal(await fetchFrom(allowedPage, await svc.token('alice')), '200 with request id');
  });

  it('stops a page on another origin', async () => {
    assert.equal(await fetchFrom(otherPage, await svc.token('alice')), 'refused: TypeError');
  });
});
