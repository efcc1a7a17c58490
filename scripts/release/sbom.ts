/**
 * CycloneDX 1.5 software bills of materials for the three release artefacts. The npm tarball's lists every
 * production package the lock file pins (`npm sbom` would too, but it refuses the lock's overrides of
 * @fastify/static); the single executable's lists the npm
 * packages esbuild actually put in its bundle (from the build's metafile); the wheel's lists the Python
 * distributions its METADATA requires. The tests validate each with @cyclonedx/cyclonedx-library's schema
 * validator, a judge we did not write.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

type Component = {
  'bom-ref': string;
  type: 'application' | 'library';
  name: string;
  version: string;
  purl?: string;
  hashes?: { alg: 'SHA-256' | 'SHA-512'; content: string }[];
};

/** A BOM for one artefact: what it is (with its sha256) and what it contains or requires. */
function bom(subject: Component, components: Component[]): object {
  return {
    $schema: 'http://cyclonedx.org/schema/bom-1.5.schema.json',
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    serialNumber: `urn:uuid:${randomUUID()}`,
    version: 1,
    metadata: { timestamp: new Date().toISOString(), tools: [{ vendor: 'dirigo', name: 'scripts/release.ts' }], component: subject },
    components,
    dependencies: [{ ref: subject['bom-ref'], dependsOn: components.map((c) => c['bom-ref']) }],
  };
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** The tarball and every production package the lock file pins (all of them travel inside it, bundled). */
export function npmPackageBom(repo: string, tarball: string, name: string, version: string): object {
  const lock = readLock(repo);
  const folders = Object.keys(lock.packages).filter((folder) => folder.includes('node_modules/') && !lock.packages[folder]!.dev);
  const subject: Component = { 'bom-ref': `${name}@${version}`, type: 'application', name, version, purl: `pkg:npm/${name}@${version}`, hashes: [{ alg: 'SHA-256', content: sha256(tarball) }] };
  return bom(subject, lockedComponents(lock, folders));
}

type Lock = { packages: Record<string, { version?: string; integrity?: string; dev?: boolean }> };

function readLock(repo: string): Lock {
  return JSON.parse(readFileSync(`${repo}/package-lock.json`, 'utf8')) as Lock;
}

/** Components for the lock file's node_modules folders, one per name and version, with npm's sha512. */
function lockedComponents(lock: Lock, folders: string[]): Component[] {
  const components = folders.sort().flatMap((folder): Component[] => {
    const entry = lock.packages[folder];
    if (!entry?.version) return [];
    const name = folder.slice(folder.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const integrity = entry.integrity?.startsWith('sha512-') ? [{ alg: 'SHA-512' as const, content: Buffer.from(entry.integrity.slice(7), 'base64').toString('hex') }] : undefined;
    return [{ 'bom-ref': `${name}@${entry.version}`, type: 'library', name, version: entry.version, purl: `pkg:npm/${name.replace('@', '%40')}@${entry.version}`, ...(integrity && { hashes: integrity }) }];
  });
  return [...new Map(components.map((c) => [c['bom-ref'], c])).values()];
}

/** The npm packages whose files esbuild bundled into the executable (`inputs`), with the versions the lock file pins. */
export function executableBom(repo: string, executable: string, inputs: string[], version: string): object {
  const folders = new Set<string>();
  for (const input of inputs) {
    // The innermost node_modules/<name> (or node_modules/@scope/name) holds the file.
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) folders.add(match[1]!);
  }
  const subject: Component = { 'bom-ref': `dirigo-executable@${version}`, type: 'application', name: basename(executable), version, hashes: [{ alg: 'SHA-256', content: sha256(executable) }] };
  return bom(subject, lockedComponents(readLock(repo), [...folders]));
}

/** The wheel's METADATA, read by Python's zipfile (the wheel was built by Python, which reads it best). */
function wheelMetadata(wheel: string): string {
  const program = 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nprint(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode())';
  return execFileSync('python3', ['-c', program, wheel], { encoding: 'utf8' });
}

/** The wheel and the distributions its METADATA requires (Requires-Dist), as PyPI package URLs. */
export function wheelBom(wheel: string): object {
  const metadata = wheelMetadata(wheel);
  const field = (key: string) => metadata.split('\n').filter((l) => l.startsWith(`${key}: `)).map((l) => l.slice(key.length + 2).trim());
  const [name = basename(wheel), version = '0'] = [field('Name')[0], field('Version')[0]];
  const components = field('Requires-Dist').map((requirement): Component => {
    const dist = /^[A-Za-z0-9._-]+/.exec(requirement)![0].toLowerCase();
    // A requirement is a range, not a pin: the BOM records the range it was built against.
    const range = requirement.slice(dist.length).split(';')[0]!.replace(/[()\s]/g, '') || '*';
    return { 'bom-ref': `pypi:${dist}`, type: 'library', name: dist, version: range, purl: `pkg:pypi/${dist}` };
  });
  const subject: Component = { 'bom-ref': `pypi:${name}@${version}`, type: 'library', name, version, purl: `pkg:pypi/${name.toLowerCase()}@${version}`, hashes: [{ alg: 'SHA-256', content: sha256(wheel) }] };
  return bom(subject, components);
}
