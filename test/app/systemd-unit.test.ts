/**
 * deploy/systemd/dirigo.service (docs/deployment.md): `systemd-analyze verify` finds nothing to say about
 * it, and `systemd-analyze security --offline=true` rates its exposure OK or better (at most 4.9 of 10);
 * it keeps what bubblewrap needs for local payloads (user, mount, PID and IPC namespaces, the @mount
 * system calls, a /proc nothing covers), logs to the journal under its own identifier, and names the
 * configuration and state directories that `dirigo serve` reads (test/app/system-layout.test.ts).
 *
 * verify runs in a root folder of its own holding systemd's units and a stand-in for the installed
 * /usr/local/bin/dirigo, so that it checks the unit against a system where Dirigo is installed. Without
 * systemd-analyze (Debian's systemd) the suite is skipped with a visible message, except under CI=true.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const UNIT = resolve(import.meta.dirname, '../../deploy/systemd/dirigo.service');
const SYSTEM_UNITS = '/usr/lib/systemd/system';

const probe = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const missing = probe.status !== 0 && `systemd-analyze is not installed (apt-get install -y systemd): ${probe.error?.message ?? probe.stderr}`;
if (missing && process.env.CI === 'true') throw new Error(missing);
if (missing) process.stderr.write(`\n*** systemd unit suite SKIPPED: ${missing} ***\n\n`);

/** The unit's settings of [Service], each key with every value it is given. */
function serviceSettings(): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const line of readFileSync(UNIT, 'utf8').split('\n')) {
    const header = /^\[(\w+)\]$/.exec(line.trim());
    if (header) section = header[1]!;
    const kv = /^(\w+)=(.*)$/.exec(line);
    if (section === 'Service' && kv) settings.set(kv[1]!, [...(settings.get(kv[1]!) ?? []), kv[2]!]);
  }
  return settings;
}

/** A root folder with systemd's own units, the unit installed, and `dirigo` where ExecStart looks. */
function installedRoot(unitText: string): string {
  const root = mkdtempSync(join(tmpdir(), 'dirigo-systemd-'));
  cpSync(SYSTEM_UNITS, join(root, SYSTEM_UNITS), { recursive: true });
  mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
  writeFileSync(join(root, 'etc/systemd/system/dirigo.service'), unitText);
  mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
  copyFileSync('/bin/true', join(root, 'usr/local/bin/dirigo'));
  chmodSync(join(root, 'usr/local/bin/dirigo'), 0o755);
  return root;
}

function verify(unitText: string): { status: number | null; output: string } {
  const root = installedRoot(unitText);
  const result = spawnSync('systemd-analyze', ['verify', '--man=no', `--root=${root}`, 'dirigo.service'], { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

describe('the systemd unit deploy/systemd/dirigo.service', { skip: missing }, () => {
  it('passes systemd-analyze verify with nothing to say', () => {
    const result = verify(readFileSync(UNIT, 'utf8'));
    assert.equal(result.status, 0, result.output);
    assert.equal(result.output, '');
  });

  it('verify would catch a mistake (the check checks)', () => {
    const result = verify(readFileSync(UNIT, 'utf8').replace('ProtectSystem=strict', 'ProtectSystem=strictest'));
    assert.match(result.output, /dirigo.service:\d+: Failed to parse protect system value, ignoring: strictest/);
  });

  it('is rated OK or better by systemd-analyze security (overall exposure at most 4.9)', () => {
    const result = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', UNIT], { encoding: 'utf8' });
    const output = `${result.stdout}${result.stderr}`;
    const rating = /Overall exposure level for dirigo\.service: (\d+\.\d) (\w+)/.exec(output);
    assert.ok(rating, `no overall rating in:\n${output}`);
    const [, exposure, label] = rating;
    assert.ok(Number(exposure) <= 4.9, `exposure ${exposure} ${label}:\n${output}`);
    assert.match(label!, /^(OK|SAFE|PERFECT)$/);
  });

  it('runs dirigo serve unprivileged in the directories it reads, logging to the journal', () => {
    const s = serviceSettings();
    assert.match(s.get('ExecStart')![0]!, /\/dirigo serve$/);
    assert.deepEqual(s.get('ConfigurationDirectory'), ['dirigo']);
    assert.deepEqual(s.get('StateDirectory'), ['dirigo']);
    assert.deepEqual(s.get('User'), ['dirigo']);
    assert.deepEqual(s.get('StandardOutput'), ['journal']);
    assert.deepEqual(s.get('SyslogIdentifier'), ['dirigo']);
    for (const [key, value] of [['NoNewPrivileges', 'yes'], ['ProtectSystem', 'strict'], ['CapabilityBoundingSet', ''], ['PrivateTmp', 'yes']]) {
      assert.deepEqual(s.get(key!), [value], key);
    }
  });

  it('leaves bubblewrap what it needs: its namespaces, the @mount calls and a /proc nothing covers', () => {
    const s = serviceSettings();
    assert.deepEqual(s.get('RestrictNamespaces')![0]!.split(' ').sort(), ['ipc', 'mnt', 'pid', 'user']);
    assert.match(s.get('SystemCallFilter')![0]!, /@system-service @mount/);
    // Each covers part of /proc, and the kernel then refuses bubblewrap's fresh /proc mount.
    for (const key of ['ProtectKernelTunables', 'ProtectKernelLogs', 'ProcSubset', 'PrivateUsers']) assert.equal(s.get(key), undefined, key);
  });
});
