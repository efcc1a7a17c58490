/**
 * Flow A driven by foreign clients (curl, Python requests) with user certificates and OpenSSL-made RFC 3820
 * proxies; tokens verified by a JOSE implementation other than the server's (oauth4webapi on WebCrypto).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oauth from 'oauth4webapi';
import { createCa, issueCertificate, userDn } from '../../src/pki/dev-ca.ts';
import { dialects } from '../helpers/dialects.ts';
import { curlJson } from '../helpers/curl.ts';
import { makeProxy } from '../helpers/openssl.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';

const run = promisify(execFile);
/** Debian's interpreter, with Debian's python3-requests. */
const DEBIAN_PYTHON = '/usr/bin/python3';

const curl = (svc: TestService, path: string, certFile?: string, keyFile?: string) =>
  curlJson<CurlBody>(svc, path, certFile ? { certFile, keyFile: keyFile! } : undefined);

/** The fields these tests read from JSON answers. */
interface CurlBody {
  error: string;
  error_description: string;
  access_token: string;
  preferred_username: string;
  groups: string[];
}

const PYTHON_FLOW_A = `
import json, sys, requests
url, ca, cert, key, setup = sys.argv[1:6]
s = requests.Session()
s.cert = (cert, key)
# verify per request: requests lets REQUESTS_CA_BUNDLE override a Session-level verify.
groups = s.get(url + "/oauth2/groups", verify=ca).json()["groups"]
setups = s.get(url + "/oauth2/setups", verify=ca).json()["setups"]
tok = s.get(url + "/oauth2/token", params={"grant_type": "client_credentials", "group": groups[0], "setup": setup}, verify=ca).json()
info = requests.get(url + "/oauth2/userinfo", headers={"Authorization": "Bearer " + tok["access_token"]}, verify=ca).json()
print(json.dumps({"groups": groups, "setups": setups, "user": info["preferred_username"], "group": tok["group"]}))
`;

for (const { dialect, skip } of await dialects()) {
  describe(`certificates from foreign clients (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({ dialect });
    });
    after(() => svc?.close());

    const tokenPath = `/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=${TEST_SETUP}`;

    it('curl with the user certificate, a proxy, and a proxy of a proxy gets groups and tokens', async () => {
      const alice = svc.pki.users.alice!;
      const proxy = makeProxy(alice);
      const proxy2 = makeProxy({ certFile: proxy.certFile, keyFile: proxy.keyFile });
      for (const [cert, key] of [[alice.certFile, alice.keyFile], [proxy.certFile, proxy.keyFile], [proxy2.certFile, proxy2.keyFile]] as const) {
        const groups = await curl(svc, '/oauth2/groups', cert, key);
        assert.equal(groups.status, 200);
        assert.deepEqual(groups.body.groups, ['dirigo_user', 'dirigo_prod']);
        const token = await curl(svc, tokenPath, cert, key);
        assert.equal(token.status, 200, JSON.stringify(token.body));
        const info = await curl(svc, `/oauth2/userinfo?access_token=${token.body.access_token}`);
        assert.equal(info.body.preferred_username, 'alice');
      }
    });

    it('Python requests with the certificate and with a proxy', async () => {
      const alice = svc.pki.users.alice!;
      const proxy = makeProxy(alice);
      for (const [cert, key] of [[alice.certFile, alice.keyFile], [proxy.certFile, proxy.keyFile]]) {
        const { stdout } = await run(DEBIAN_PYTHON, ['-c', PYTHON_FLOW_A, svc.url, svc.pki.caFile, cert!, key!, TEST_SETUP]);
        assert.deepEqual(JSON.parse(stdout), { groups: ['dirigo_user', 'dirigo_prod'], setups: [TEST_SETUP, 'Dirigo-Other'], user: 'alice', group: 'dirigo_user' });
      }
    });

    it('refuses certificates of another CA, expired ones, forged proxies and CA leaves with 401', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-bad-certs-'));
      const other = await createCa('/O=Elsewhere/CN=Other CA');
      const stranger = await issueCertificate(other, { dn: userDn('alice'), kind: 'client' });
      const expired = await issueCertificate(svc.pki.ca, { dn: userDn('alice'), kind: 'client', notBefore: new Date(Date.now() - 9e8), notAfter: new Date(Date.now() - 1e8) });
      const caLeaf = await issueCertificate(svc.pki.ca, { dn: userDn('alice'), kind: 'client', ca: true });
      const files: [string, string][] = [];
      for (const [name, c] of Object.entries({ stranger, expired, caLeaf })) {
        writeFileSync(join(dir, `${name}.crt`), c.certPem);
        writeFileSync(join(dir, `${name}.key`), c.keyPem);
        files.push([join(dir, `${name}.crt`), join(dir, `${name}.key`)]);
      }
      const forged = makeProxy(svc.pki.users.alice!, { signingKeyFile: svc.pki.users.bob!.keyFile });
      files.push([forged.certFile, forged.keyFile]);
      for (const [cert, key] of files) {
        const res = await curl(svc, tokenPath, cert, key);
        assert.equal(res.status, 401, cert);
        assert.equal(res.body.error, 'invalid_client');
        assert.match(res.body.error_description, /certificate was rejected/);
      }
      // A valid certificate whose DN is not registered.
      const unknown = await issueCertificate(svc.pki.ca, { dn: userDn('nobody'), kind: 'client' });
      const res = await svc.request(tokenPath, { as: { cert: unknown.certPem, key: unknown.keyPem } });
      assert.equal(res.status, 401);
      assert.match(res.json.error_description, /not a registered user/);
    });

    it('the token verifies against /oauth2/jwks with another JOSE implementation (oauth4webapi, RFC 9068)', async () => {
      const token = await svc.token('alice');
      const jwks = await svc.request('/oauth2/jwks');
      assert.equal(jwks.status, 200);
      assert.ok(jwks.json.keys.length >= 1);
      const metadata = await svc.request('/.well-known/oauth-authorization-server');
      const as = metadata.json as oauth.AuthorizationServer;
      assert.equal(as.issuer, svc.url);
      const customFetch = async (url: string, init?: RequestInit): Promise<Response> => {
        const res = await svc.request(new URL(url).pathname, { headers: (init?.headers ?? {}) as Record<string, string> });
        return new Response(new Uint8Array(res.body), { status: res.status, headers: { 'content-type': 'application/json' } });
      };
      const request = new Request(`${svc.url}/jobs`, { headers: { authorization: `Bearer ${token}` } });
      const claims = await oauth.validateJwtAccessToken(as, request, svc.url, {
        [oauth.customFetch]: customFetch as typeof fetch,
        [oauth.allowInsecureRequests]: false,
      });
      assert.equal(claims.sub, 'alice');
      assert.equal(claims.client_id, 'x509-certificate');
    });
  });
}
