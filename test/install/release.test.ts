/**
 * Issue 33, supply chain: what `npm run release` left in release/ — the npm tarball, the single executable,
 * the Python wheel, a CycloneDX SBOM of each and SHA256SUMS — checked by tools we did not write:
 * `sha256sum -c` for the checksums and @cyclonedx/cyclonedx-library's strict JSON-schema validator for the
 * SBOMs. CI runs `npm run release` before the tests (.ci/run); elsewhere the suite is skipped, with a
 * visible message, when release/ has not been built.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Spec, Validation } from '@cyclonedx/cyclonedx-library';

const release = join(import.meta.dirname, '..', '..', 'release');
const sums = join(release, 'SHA256SUMS');
const missing = existsSync(sums) ? false : 'release/ has not been built (npm run release)';
if (missing && process.env.CI === 'true') throw new Error(missing);
if (missing) process.stderr.write(`\n*** release suite SKIPPED: ${missing} ***\n\n`);

type Bom = { metadata: { component: { name: string; hashes?: { alg: string; content: string }[] } }; components: { name: string; purl?: string }[] };

describe('npm run release', { skip: missing }, () => {
  const listed = () => readFileSync(sums, 'utf8').trim().split('\n').map((line) => line.split(/\s+/)[1]!);

  it('lists a tarball, an executable and a wheel, each with its SBOM, and sha256sum -c accepts them all', () => {
    const files = listed();
    for (const shape of [/^dirigo-\d+\.\d+\.\d+\.tgz$/, /^dirigo-linux-x64$/, /\.whl$/]) {
      const artefact = files.find((f) => shape.test(f));
      assert.ok(artefact, `SHA256SUMS lists no file matching ${shape}: ${files.join(', ')}`);
      assert.ok(files.includes(`${artefact}.cdx.json`), `${artefact} has no SBOM`);
    }
    const checked = execFileSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: release, encoding: 'utf8' });
    assert.equal(checked.trim().split('\n').filter((l) => l.endsWith(': OK')).length, files.length);
  });

  it('every SBOM is valid CycloneDX 1.5 and names its artefact by sha256', async () => {
    const validator = new Validation.JsonStrictValidator(Spec.Version.v1dot5);
    for (const file of listed().filter((f) => f.endsWith('.cdx.json'))) {
      const text = readFileSync(join(release, file), 'utf8');
      assert.equal(await validator.validate(text), null, `${file} is not valid CycloneDX 1.5`);
      const artefact = file.slice(0, -'.cdx.json'.length);
      const digest = createHash('sha256').update(readFileSync(join(release, artefact))).digest('hex');
      const bom = JSON.parse(text) as Bom;
      assert.deepEqual(bom.metadata.component.hashes?.find((h) => h.alg === 'SHA-256')?.content, digest, `${file} does not name ${artefact}'s sha256`);
    }
  });

  it('each SBOM lists what its artefact is made of', () => {
    const components = (suffix: RegExp) => {
      const file = listed().find((f) => suffix.test(f))!;
      return (JSON.parse(readFileSync(join(release, file), 'utf8')) as Bom).components.map((c) => c.name);
    };
    // The server's own dependencies travel in the tarball; the executable bundles the client's HTTP stack.
    assert.ok(components(/\.tgz\.cdx\.json$/).includes('fastify'));
    assert.ok(components(/^dirigo-linux-x64\.cdx\.json$/).includes('undici'));
    assert.ok(components(/\.whl\.cdx\.json$/).includes('urllib3'));
  });
});
