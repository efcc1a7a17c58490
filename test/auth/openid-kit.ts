/** A sign-in as openid-client's relying party sees it: the authorization URL, then the pages as a browser. */
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import type { TestService } from '../helpers/service.ts';
import { Browser, PASSWORDS } from '../helpers/oauth-kit.ts';

export interface Authorized {
  callback: URL;
  verifier: string;
  state: string;
}

/** alice signs in and allows `scope` for dirigo_user; returns the callback the browser was sent to. */
export async function browserAuthorize(svc: TestService, config: client.Configuration, redirectUri: string, scope: string, nonce?: string): Promise<Authorized> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    state,
    ...(nonce ? { nonce } : {}),
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const browser = new Browser(svc);
  try {
    let page = await browser.follow(url.href);
    page = await browser.login(page, 'alice', PASSWORDS.alice!);
    const answer = await browser.consent(page, 'allow', { group: 'dirigo_user' });
    assert.equal(answer.status, 303);
    return { callback: new URL(answer.location!), verifier, state };
  } finally {
    await browser.close();
  }
}
