/**
 * `dirigo serve` installed system-wide (docs/deployment.md, deploy/systemd/dirigo.service): with the
 * CONFIGURATION_DIRECTORY and STATE_DIRECTORY that systemd sets, it reads /etc/dirigo/config.yaml (its
 * relative paths, the PKI, from there) and writes its state only into /var/lib/dirigo, never into the
 * folder it starts in; with an empty configuration directory it starts on the embedded default in the
 * state directory. The discovery order: --config, DIRIGO_CONFIG, CONFIGURATION_DIRECTORY for the config;
 * --data-dir, DIRIGO_DATA_DIR, STATE_DIRECTORY, ./dirigo-data for the data dir.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseDocument } from 'yaml';
import { bootstrapDataDir } from '../../src/app/bootstrap.ts';
import { serveLocations } from '../../src/app/cli/locations.ts';
import { spawnServe, terminateServe } from '../helpers/serve-command.ts';

const run = promisify(execFile);
const LOCATION_VARIABLES = ['DIRIGO_CONFIG', 'DIRIGO_DATA_DIR', 'CONFIGURATION_DIRECTORY', 'STATE_DIRECTORY'];

/** The test's environment without any location variable, plus `env`. */
function environmentWith(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !LOCATION_VARIABLES.includes(k)));
  return { ...base, ...env };
}

function serve(cwd: string, env: Record<string, string>): ReturnType<typeof spawnServe> {
  return spawnServe(['--port', '0'], { cwd, env: environmentWith(env) });
}

/** Every file under `dir`, relative to it, sorted. */
function tree(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).sort();
}

describe('dirigo serve installed system-wide', () => {
  const root = mkdtempSync(join(tmpdir(), 'dirigo-system-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('reads config.yaml from CONFIGURATION_DIRECTORY and writes its state only into STATE_DIRECTORY', async () => {
    // /etc/dirigo as docs/deployment.md lays it out: config.yaml and pki/, the database in the state dir.
    const etc = join(root, 'etc', 'dirigo');
    const state = join(root, 'var', 'lib', 'dirigo');
    const cwd = join(root, 'cwd');
    for (const d of [etc, state, cwd]) mkdirSync(d, { recursive: true });
    const seed = join(root, 'seed');
    await bootstrapDataDir(seed);
    cpSync(join(seed, 'pki'), join(etc, 'pki'), { recursive: true });
    const config = parseDocument(readFileSync(join(seed, 'config.yaml'), 'utf8'));
    config.setIn(['database', 'url'], `sqlite:${join(state, 'dirigo.db')}`);
    writeFileSync(join(etc, 'config.yaml'), config.toString(), { mode: 0o600 });
    const etcBefore = tree(etc);

    const { child, banner } = await serve(cwd, { CONFIGURATION_DIRECTORY: etc, STATE_DIRECTORY: state });
    try {
      assert.match(banner, new RegExp(`config\\s+${join(etc, 'config.yaml')} \\(from CONFIGURATION_DIRECTORY\\)`));
      assert.match(banner, new RegExp(`data dir\\s+${state} \\(from STATE_DIRECTORY\\)`));
      assert.doesNotMatch(banner, /created with the embedded default/);
      // The TLS certificate is the one under /etc/dirigo/pki: a flow A token with alice's from there.
      const url = /Dirigo serving (https:\/\/\S+)/.exec(banner)![1]!;
      const users = join(etc, 'pki', 'users');
      const { stdout } = await run('curl', ['-s', '--cacert', join(etc, 'pki', 'ca.crt'), '--cert', join(users, 'alice.crt'), '--key', join(users, 'alice.key'), `${url}/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=Dirigo-Local`]);
      assert.equal(JSON.parse(stdout).token_type, 'Bearer');
    } finally {
      assert.equal(await terminateServe(child), 0);
    }
    assert.ok(existsSync(join(state, 'dirigo.db')), 'the database is in STATE_DIRECTORY');
    assert.deepEqual(tree(etc), etcBefore, 'nothing is written into CONFIGURATION_DIRECTORY');
    assert.deepEqual(tree(cwd), [], 'nothing is written into the folder serve started in');
  });

  it('starts on the embedded default in STATE_DIRECTORY when CONFIGURATION_DIRECTORY holds no config.yaml', async () => {
    const etc = join(root, 'empty-etc');
    const state = join(root, 'default-state');
    const cwd = join(root, 'cwd2');
    for (const d of [etc, cwd]) mkdirSync(d, { recursive: true });
    const { child, banner } = await serve(cwd, { CONFIGURATION_DIRECTORY: etc, STATE_DIRECTORY: state });
    try {
      assert.match(banner, new RegExp(`data dir\\s+${state} \\(from STATE_DIRECTORY, created with the embedded default\\)`));
      assert.match(banner, new RegExp(`config\\s+${join(state, 'config.yaml')}\\n`));
    } finally {
      await terminateServe(child);
    }
    for (const f of ['config.yaml', 'dirigo.db', 'pki/ca.crt', 'sandboxes']) assert.ok(existsSync(join(state, f)), `${f} in STATE_DIRECTORY`);
    assert.deepEqual(tree(etc), []);
    assert.deepEqual(tree(cwd), []);
  });

  it('takes the flags first, then DIRIGO_CONFIG and DIRIGO_DATA_DIR, then the systemd variables', () => {
    const confDir = join(root, 'conf');
    mkdirSync(confDir, { recursive: true });
    writeFileSync(join(confDir, 'config.yaml'), '{}\n');
    const saved = Object.fromEntries(LOCATION_VARIABLES.map((k) => [k, process.env[k]]));
    const set = (env: Record<string, string | undefined>) => {
      for (const k of LOCATION_VARIABLES) delete process.env[k];
      for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v;
    };
    try {
      const all = { DIRIGO_CONFIG: '/x/dirigo.yaml', DIRIGO_DATA_DIR: '/x/data', CONFIGURATION_DIRECTORY: confDir, STATE_DIRECTORY: '/var/lib/dirigo:/var/lib/other' };
      set(all);
      assert.deepEqual(serveLocations({ 'data-dir': '/flag/data', config: '/flag/config.yaml' }), {
        dataDir: { path: '/flag/data', source: '--data-dir' },
        config: { path: '/flag/config.yaml', source: '--config' },
      });
      assert.deepEqual(serveLocations({}), { dataDir: { path: '/x/data', source: 'DIRIGO_DATA_DIR' }, config: { path: '/x/dirigo.yaml', source: 'DIRIGO_CONFIG' } });
      set({ ...all, DIRIGO_CONFIG: undefined, DIRIGO_DATA_DIR: undefined });
      assert.deepEqual(serveLocations({}), {
        dataDir: { path: '/var/lib/dirigo', source: 'STATE_DIRECTORY' },
        config: { path: join(confDir, 'config.yaml'), source: 'CONFIGURATION_DIRECTORY' },
      });
      set({});
      assert.deepEqual(serveLocations({}), { dataDir: { path: join(process.cwd(), 'dirigo-data'), source: 'the default' } });
    } finally {
      set(saved);
    }
  });
});
