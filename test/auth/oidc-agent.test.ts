/**
 * Debian's oidc-agent as a user runs it against Dirigo: `oidc-gen` registers a client dynamically (its
 * default), asks for `openid profile offline_access`, signs the user in by the device flow, and
 * `oidc-token` prints access tokens Dirigo accepts, refreshed when asked for a longer validity.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestService } from '../helpers/service.ts';
import { approveDevice, Browser, startOAuthService } from '../helpers/oauth-kit.ts';

const run = promisify(execFile);
const missing = spawnSync('oidc-gen', ['--version']).status === 0 ? false : 'oidc-agent-cli is not installed';
if (missing && process.env.CI) throw new Error(`${missing}; .ci/run installs it`);

describe('oidc-agent (oidc-gen, oidc-token) against Dirigo', { skip: missing }, () => {
  let svc: TestService;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let agentPid: number | undefined;
  before(async () => {
    svc = await startOAuthService('sqlite', { oauth: { deviceInterval: 1, registration: { enabled: true } } });
    home = mkdtempSync(join(tmpdir(), 'oidc-agent-'));
    writeFileSync(join(home, 'ca.pem'), svc.pki.ca.certPem);
    env = { PATH: process.env.PATH, HOME: home, OIDC_SOCK: join(home, 'agent.sock') };
    // The agent daemonizes and keeps its standard output: give it a file, not a pipe that would never close.
    const info = join(home, 'agent.json');
    const out = openSync(info, 'w');
    const started = spawnSync('oidc-agent', ['--json', '-a', join(home, 'agent.sock'), '--no-autoload', '--no-webserver', '--no-scheme', '--always-allow-idtoken'], { env, stdio: ['ignore', out, 'inherit'] });
    closeSync(out);
    assert.equal(started.status, 0, 'oidc-agent did not start');
    // The daemon, not the parent that exits, writes the socket and pid.
    for (let i = 0; i < 100 && !readFileSync(info, 'utf8').includes('}'); i++) await sleep(50);
    agentPid = Number((JSON.parse(readFileSync(info, 'utf8')) as { dpid: string }).dpid);
  });
  after(async () => {
    // The agent runs as two processes (it forks a helper); both name the test's socket.
    if (agentPid) spawnSync('pkill', ['-f', join(home, 'agent.sock')]);
    await svc?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('oidc-gen registers, signs in by the device flow; oidc-token prints tokens Dirigo accepts and refreshes them', async () => {
    // oidc-gen writes to files, read back for the user code it shows (on standard error, in bold).
    const outFile = join(home, 'gen.out');
    const errFile = join(home, 'gen.err');
    const [outFd, errFd] = [openSync(outFile, 'w'), openSync(errFile, 'w')];
    const gen = spawn('oidc-gen', ['dirigo', `--issuer=${svc.url}/`, '--scope=openid profile offline_access wlcg.groups', '--flow=device', `--cp=${join(home, 'ca.pem')}`,
      '--pw-cmd=echo account-password', '--no-url-call', '--confirm-default', '--prompt=none'], { env, stdio: ['ignore', outFd, errFd] });
    closeSync(outFd);
    closeSync(errFd);
    const ended = new Promise<number | null>((resolve) => gen.on('exit', resolve));
    // eslint-disable-next-line no-control-regex -- the escape character starts the colour sequences removed here
    const shown = () => `${readFileSync(outFile, 'utf8')}${readFileSync(errFile, 'utf8')}`.replace(/\x1b\[[0-9;]*m/g, '');
    let code: string | undefined;
    for (let i = 0; i < 300 && code === undefined && gen.exitCode === null; i++) {
      await sleep(100);
      code = /enter the code: ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(shown())?.[1];
    }
    assert.ok(code, `oidc-gen showed no user code:\n${shown()}`);
    const browser = new Browser(svc);
    try {
      const consent = await approveDevice(browser, code, 'allow');
      assert.equal(consent.status, 200);
    } finally {
      await browser.close();
    }
    assert.equal(await ended, 0, `oidc-gen failed:\n${shown()}`);

    const first = (await run('oidc-token', ['dirigo'], { env })).stdout.trim();
    const me = await svc.request('/jobs', { headers: { authorization: `Bearer ${first}` } });
    assert.equal(me.status, 200, me.text);
    // Asking for more validity than the token has left makes the agent use its refresh token.
    const refreshed = (await run('oidc-token', ['--time=86400', 'dirigo'], { env })).stdout.trim();
    assert.notEqual(refreshed, first);
    assert.equal((await svc.request('/jobs', { headers: { authorization: `Bearer ${refreshed}` } })).status, 200);
    const idToken = (await run('oidc-token', ['--id-token', 'dirigo'], { env })).stdout.trim();
    assert.equal(JSON.parse(Buffer.from(idToken.split('.')[1] as string, 'base64url').toString()).sub, 'alice');
  });
});
